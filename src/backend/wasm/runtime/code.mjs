// SPDX-License-Identifier: MIT
// agentjail level 4: the code interpreter's bridge (runner.mjs
// --code-bridge). It speaks the service's line protocol, the one of the
// level-1 bridge (src/daemon/code/bridge.py): requests one JSON object a
// line on stdin, {"id", "op": run|create|list|restart|interrupt|delete|
// warm, ...}; answers one JSON object a line on stdout with the request's
// "id": a run's events (stdout, stderr, display, result, error, end) or
// one {"type": "reply"} / {"type": "fail"}. Each context is a worker
// thread (code-worker.mjs) keeping one Pyodide instance warm; a timeout
// interrupts it (KeyboardInterrupt through Pyodide's interrupt buffer) and
// the context lives on; code that does not stop within GRACE_MS has its
// worker ended and the context restarted.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const GRACE_MS = 5000;
const CHUNK = 1 << 20; // output per event (the service takes lines up to 16 MiB)
const FLUSH_MS = 10; // output gathered this long goes out as one event

function send(obj) {
	fs.writeSync(1, JSON.stringify(obj) + '\n');
}

class Context {
	constructor(name, cwd, base) {
		this.name = name;
		this.cwd = cwd || null;
		this.base = base;
		this.count = 0;
		this.restarts = 0;
		this.busy = false;
		this.worker = null;
		this.chain = Promise.resolve(); // one run (or restart) at a time
		this.run = null; // the run in progress: {rid, out, done}
	}

	describe() {
		return {
			id: this.name,
			language: 'python',
			cwd: this.cwd,
			state: this.busy ? 'busy' : 'idle',
			execution_count: this.count,
			restarts: this.restarts,
		};
	}

	// A new worker, resolved when its Pyodide is ready.
	start() {
		this.interrupt = new Int32Array(new SharedArrayBuffer(4));
		const w = new Worker(path.join(HERE, 'code-worker.mjs'), {
			workerData: {
				env: this.base.env,
				preopens: this.base.preopens,
				cwd: this.base.cwd,
				ctxCwd: this.cwd,
				interrupt: this.interrupt.buffer,
			},
			stdout: false,
			stderr: false,
		});
		this.worker = w;
		return new Promise((resolve, reject) => {
			let ready = false;
			w.on('message', (m) => {
				if (this.worker !== w) return; // an old worker's last words
				if (!ready && m.t === 'ready') {
					ready = true;
					resolve();
				} else if (!ready && m.t === 'fail') {
					reject(new Error(m.msg));
				} else if (this.run) {
					this.onMessage(m);
				}
			});
			const gone = (why) => {
				if (!ready) reject(new Error(why));
				if (this.worker !== w) return; // stopped by us
				this.worker = null;
				if (ready && this.run) this.run.died(why);
			};
			w.on('error', (e) => gone(e && e.message ? e.message : String(e)));
			w.on('exit', (code) => gone(`the Python runtime ended (exit ${code})`));
		});
	}

	stop() {
		const w = this.worker;
		this.worker = null;
		if (w) w.terminate();
	}

	async restart() {
		this.stop();
		this.count = 0;
		this.restarts++;
		await this.start();
	}

	// Output gathered for FLUSH_MS, in chunks; before any other event.
	flush() {
		const r = this.run;
		if (!r) return;
		clearTimeout(r.timer);
		r.timer = null;
		for (const fd of [1, 2]) {
			const s = r.out[fd];
			r.out[fd] = '';
			for (let i = 0; i < s.length; i += CHUNK)
				send({ id: r.rid, type: fd === 1 ? 'stdout' : 'stderr', data: s.slice(i, i + CHUNK) });
		}
	}

	onMessage(m) {
		const r = this.run;
		if (m.t === 'out') {
			r.out[m.fd] += m.data;
			if (!r.timer) r.timer = setTimeout(() => this.flush(), FLUSH_MS);
		} else if (m.t === 'ev') {
			this.flush();
			// a timed-out run's KeyboardInterrupt is said as a TimeoutError
			if (m.ev.type === 'error' && r.timedOut && m.ev.name === 'KeyboardInterrupt') return;
			send({ id: r.rid, ...m.ev });
		} else if (m.t === 'done') {
			r.finish(m.count);
		} else if (m.t === 'fail') {
			r.died(m.msg);
		}
	}

	// One run: its events, then its end; resolves when it is over.
	exec(rid, code, timeout, history) {
		return new Promise((resolve) => {
			const t0 = Date.now();
			const r = { rid, out: { 1: '', 2: '' }, timer: null, timedOut: false, over: false };
			const end = (extra) => {
				if (r.over) return;
				r.over = true;
				clearTimeout(r.deadline);
				clearTimeout(r.grace);
				this.flush();
				this.run = null;
				send({ id: rid, type: 'end', timed_out: r.timedOut, duration_ms: Date.now() - t0, ...extra });
				resolve();
			};
			r.finish = (count) => {
				if (history && count !== null) this.count = count;
				if (r.timedOut)
					send({
						id: rid,
						type: 'error',
						name: 'TimeoutError',
						value: `the code ran past its timeout of ${timeout}s and was interrupted`,
						traceback: [],
					});
				end({ execution_count: history ? count : null });
			};
			// the worker ended, or did not stop at its interrupt: restarted
			r.died = async (why, stuck) => {
				if (r.over) return;
				r.over = true; // no more events of this run
				clearTimeout(r.deadline);
				clearTimeout(r.grace);
				this.flush();
				this.run = null;
				send({
					id: rid,
					type: 'error',
					name: stuck ? 'TimeoutError' : 'KernelDied',
					value: stuck
						? 'the code did not stop at its interrupt; the context was restarted'
						: `${why}; the context was restarted`,
					traceback: [],
				});
				const endv = {
					id: rid,
					type: 'end',
					timed_out: r.timedOut,
					execution_count: null,
					duration_ms: 0,
					restarted: true,
					kernel_died: !stuck,
				};
				try {
					await this.restart();
				} catch (e) {
					endv.restart_error = e.message;
				}
				endv.duration_ms = Date.now() - t0;
				send(endv);
				resolve();
			};
			this.run = r;
			Atomics.store(this.interrupt, 0, 0);
			if (timeout > 0)
				r.deadline = setTimeout(() => {
					r.timedOut = true;
					Atomics.store(this.interrupt, 0, 2); // SIGINT
					r.grace = setTimeout(() => {
						this.stop();
						r.died('', true);
					}, GRACE_MS);
				}, timeout * 1000);
			this.worker.postMessage({ t: 'run', code, history });
		});
	}

	// Queued behind the run in progress.
	queue(fn) {
		const p = this.chain.then(fn);
		this.chain = p.catch(() => {});
		return p;
	}

	async ensure() {
		if (!this.worker) {
			if (this.started) await this.restart();
			else await this.start();
			this.started = true;
		}
	}
}

export async function serve(base) {
	const contexts = new Map();
	const fail = (rid, status, code, message) => send({ id: rid, type: 'fail', status, code, message });

	async function run(req, history) {
		const rid = req.id,
			name = req.context || 'default';
		let ctx = contexts.get(name);
		if (!ctx && name === 'default') contexts.set(name, (ctx = new Context(name, null, base)));
		if (!ctx) return fail(rid, 404, 'not_found', `no code context '${name}'`);
		await ctx.queue(async () => {
			ctx.busy = true;
			try {
				await ctx.ensure();
			} catch (e) {
				send({ id: rid, type: 'error', name: 'KernelFailed', value: `the Python runtime did not start: ${e.message}`, traceback: [] });
				send({ id: rid, type: 'end', execution_count: null, duration_ms: 0, timed_out: false });
				ctx.busy = false;
				return;
			}
			await ctx.exec(rid, typeof req.code === 'string' ? req.code : '', history ? Number(req.timeout) || 0 : 0, history);
			ctx.busy = false;
		});
	}

	async function control(req) {
		const rid = req.id,
			op = req.op,
			name = req.context || 'default';
		if (op === 'list')
			return send({ id: rid, type: 'reply', body: { contexts: [...contexts.values()].map((c) => c.describe()) } });
		if (op === 'create') {
			if (contexts.has(name)) return fail(rid, 409, 'conflict', `the code context '${name}' exists`);
			const ctx = new Context(name, req.cwd, base);
			contexts.set(name, ctx);
			try {
				await ctx.queue(() => ctx.ensure());
			} catch (e) {
				ctx.stop();
				contexts.delete(name);
				return fail(rid, 500, 'kernel_failed', `the Python runtime did not start: ${e.message}`);
			}
			return send({ id: rid, type: 'reply', status: 201, body: ctx.describe() });
		}
		let ctx = contexts.get(name);
		if (!ctx && name === 'default') contexts.set(name, (ctx = new Context(name, null, base)));
		if (!ctx) return fail(rid, 404, 'not_found', `no code context '${name}'`);
		if (op === 'interrupt') {
			if (ctx.run) Atomics.store(ctx.interrupt, 0, 2);
		} else if (op === 'restart') {
			if (ctx.run) Atomics.store(ctx.interrupt, 0, 2); // the run ends, then the restart
			await ctx.queue(async () => {
				if (ctx.started) await ctx.restart();
				else await ctx.ensure();
			});
		} else if (op === 'delete') {
			contexts.delete(name);
			if (ctx.run) Atomics.store(ctx.interrupt, 0, 2);
			await ctx.queue(() => ctx.stop());
			return send({ id: rid, type: 'reply', body: { id: name, deleted: true } });
		} else if (op === 'warm') {
			return run(req, false);
		} else {
			return fail(rid, 400, 'bad_request', `unknown op '${op}'`);
		}
		send({ id: rid, type: 'reply', body: ctx.describe() });
	}

	send({ id: 0, type: 'ready', pid: process.pid });
	const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
	for await (const line of rl) {
		let req;
		try {
			req = JSON.parse(line);
		} catch {
			continue;
		}
		if (!req || typeof req !== 'object' || !Number.isInteger(req.id)) continue;
		(req.op === 'run' ? run(req, true) : control(req)).catch((e) =>
			fail(req.id, 500, 'bridge_error', `${e.name}: ${e.message}`)
		);
	}
	// the service closed our stdin: every context ends
	for (const c of contexts.values()) c.stop();
	return 0;
}
