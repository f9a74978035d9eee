// SPDX-License-Identifier: MIT
// agentjail level 4 (--isolation wasm, docs/levels.md): the program Node.js
// runs inside a level-1 sandbox (src/backend/wasm/backend.c starts it). It
// runs one command on a WebAssembly runtime:
//   PATH.wasm ARGS   a WASI (preview 1) module on node:wasi, which sees only
//                    its preopens (/workspace, /tmp, the --ro/--rw binds)
//   python3 ...      Python on Pyodide (CPython compiled to WebAssembly)
//   node ...         JavaScript on QuickJS compiled to WebAssembly
// or, with --code-bridge and no command, the code interpreter's bridge
// (code.mjs: Python contexts on Pyodide for the service's run_code).
//
//   node [V8 flags] runner.mjs [--env NAME=VALUE]... [--preopen DIR]...
//        [--memory-bytes N] [--code-bridge] -- [COMMAND ARGS...]
//
// The command's environment is node's (PATH, HOME, TERM, LANG, secret
// placeholders) with the --env entries: the user's variables never reach
// node itself (NODE_OPTIONS would run code outside the WebAssembly wall).
// Exit codes: the command's; 127 not found, 126 not runnable, 134 a trap
// (with its reason on stderr), 125 this runner's usage.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WASI } from 'node:wasi';

import { inside, startPyodide } from './py.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXIT_TRAP = 134;

function say(msg) {
	try {
		fs.writeSync(2, `agentjail: ${msg}\n`);
	} catch {
		/* stderr closed */
	}
}

function die(code, msg) {
	say(msg);
	process.exit(code);
}

function parseArgs(argv) {
	const o = { env: {}, preopens: ['/workspace', '/tmp'], memory: 0, bridge: false, cmd: [] };
	let i = 0;
	for (; i < argv.length; i++) {
		const a = argv[i];
		if (a === '--') {
			i++;
			break;
		}
		if (a === '--code-bridge') {
			o.bridge = true;
			continue;
		}
		const v = argv[++i];
		if (v === undefined) die(125, `wasm runner: ${a} needs a value`);
		if (a === '--env') {
			const k = v.indexOf('=');
			if (k <= 0) die(125, `wasm runner: --env ${v}: expected NAME=VALUE`);
			o.env[v.slice(0, k)] = v.slice(k + 1);
		} else if (a === '--preopen') {
			o.preopens.push(v);
		} else if (a === '--memory-bytes') {
			o.memory = Number(v);
		} else {
			die(125, `wasm runner: unknown option ${a}`);
		}
	}
	o.cmd = argv.slice(i);
	if (!o.cmd.length && !o.bridge) die(125, 'wasm runner: no command');
	return o;
}

const opt = parseArgs(process.argv.slice(2));
const env = { ...process.env, ...opt.env };
// the directories that exist, each once
const preopens = [...new Set(opt.preopens)].filter((d) => {
	try {
		return fs.statSync(d).isDirectory();
	} catch {
		return false;
	}
});
const cwd = process.cwd();

// A program file named by the command: resolved (symlinks too) inside a
// preopened directory, else refused as the module could not see it.
function programFile(name) {
	let real;
	try {
		real = fs.realpathSync(path.resolve(cwd, name));
	} catch (e) {
		die(127, `${name}: ${e.code === 'ENOENT' ? 'not found' : e.message}`);
	}
	if (!preopens.some((d) => inside(d, real)))
		die(126, `${name}: outside the directories the sandbox sees (${preopens.join(', ')})`);
	try {
		return fs.readFileSync(real);
	} catch (e) {
		die(126, `${name}: ${e.message}`);
	}
}

// A RuntimeError (or a RangeError: the stack) from the module: a trap.
function trap(e, memory) {
	let why = e && e.message ? e.message : String(e);
	if (e instanceof RangeError && /call stack/i.test(why)) why = 'call stack exhausted';
	// the allocation that failed is unknown: near the limit, say so
	const used = memory ? memory.buffer.byteLength : 0;
	if (opt.memory && used >= opt.memory * 0.75)
		why +=
			` (out of memory? the linear memory is at ${used >> 20} MiB of its ` +
			`${Math.floor(opt.memory / 1048576)} MiB limit, set by --memory)`;
	die(EXIT_TRAP, `wasm trap: ${why}`);
}

function runWasi(cmd) {
	const bytes = programFile(cmd[0]);
	let mod;
	try {
		mod = new WebAssembly.Module(bytes);
	} catch (e) {
		die(126, `${cmd[0]}: not a WebAssembly module (${e.message})`);
	}
	const pre = {};
	for (const d of preopens) pre[d] = d;
	// relative paths: the working directory, when the module sees it
	if (preopens.some((d) => inside(d, cwd))) pre['.'] = cwd;
	const wasi = new WASI({ version: 'preview1', args: cmd, env, preopens: pre, returnOnExit: true });
	let inst;
	try {
		inst = new WebAssembly.Instance(mod, wasi.getImportObject());
	} catch (e) {
		die(126, `${cmd[0]}: cannot instantiate (${e.message}): only WASI preview 1 imports are provided`);
	}
	if (typeof inst.exports._start !== 'function')
		die(126, `${cmd[0]}: not a WASI command (no _start export)`);
	try {
		return wasi.start(inst);
	} catch (e) {
		if (e instanceof WebAssembly.RuntimeError || e instanceof RangeError)
			trap(e, inst.exports.memory);
		throw e;
	}
}

// python3 [-c CODE | -m MODULE | FILE | -] ARGS: Pyodide, with /workspace,
// /tmp and the binds mounted from the sandbox (Emscripten's NODEFS).
const PY_MAIN = `
def __aj_main(mode, target, argv):
    import sys, runpy, traceback
    sys.argv = list(argv)
    try:
        if mode == 'c':
            exec(compile(target, '<string>', 'exec'), {'__name__': '__main__', '__builtins__': __builtins__})
        elif mode == 'm':
            runpy.run_module(target, run_name='__main__', alter_sys=True)
        else:
            runpy.run_path(target, run_name='__main__')
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code & 255
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
__aj_main
`;

async function runPython(cmd) {
	let i = 1;
	while (i < cmd.length && /^-[uBEIsSq]+$/.test(cmd[i])) i++; // flags without effect here
	let mode, target, argv;
	const a = cmd[i];
	if (a === '-c' || a === '-m') {
		if (i + 1 >= cmd.length) die(2, `python3: ${a} needs an argument`);
		mode = a[1];
		target = cmd[i + 1];
		argv = [a === '-c' ? '-c' : target, ...cmd.slice(i + 2)];
	} else if (a === undefined || a === '-') {
		mode = 'c';
		target = fs.readFileSync(0, 'utf8');
		argv = ['-', ...cmd.slice(i + 1)];
	} else if (a.startsWith('-') && a !== '-') {
		die(2, `python3: option ${a} is not supported at --isolation wasm`);
	} else {
		programFile(a); // inside a preopened directory
		mode = 'f';
		target = path.resolve(cwd, a);
		argv = [a, ...cmd.slice(i + 1)];
	}
	const py = await startPyodide({ env, preopens, cwd });
	py.setStdout({ write: (b) => fs.writeSync(1, b) });
	py.setStderr({ write: (b) => fs.writeSync(2, b) });
	py.setStdin({ read: (b) => { try { return fs.readSync(0, b); } catch (e) { if (e.code === 'EAGAIN') return 0; throw e; } } });
	const main = py.runPython(PY_MAIN);
	try {
		return main(mode, target, py.toPy(argv));
	} catch (e) {
		if (e instanceof WebAssembly.RuntimeError || e instanceof RangeError) trap(e, null);
		throw e;
	}
}

// node [-e CODE | -p CODE | FILE | -] ARGS: QuickJS. The script gets
// console, process.argv, process.env and process.exit: no files, no
// modules, no network, no timers.
async function runJs(cmd) {
	let i = 1,
		code,
		name,
		print = false;
	const a = cmd[i];
	if (a === '-e' || a === '-p' || a === '--eval' || a === '--print') {
		if (i + 1 >= cmd.length) die(9, `node: ${a} requires an argument`);
		code = cmd[i + 1];
		name = '[eval]';
		print = a === '-p' || a === '--print';
		i += 2;
	} else if (a === undefined || a === '-') {
		code = fs.readFileSync(0, 'utf8');
		name = '[stdin]';
		i++;
	} else if (a.startsWith('-')) {
		die(9, `node: option ${a} is not supported at --isolation wasm`);
	} else {
		code = programFile(a).toString('utf8').replace(/^#!.*/, '');
		name = a;
		i++;
	}
	const { newQuickJSWASMModuleFromVariant } = await import(
		path.join(HERE, 'node_modules/quickjs-emscripten-core/dist/index.mjs')
	);
	const variant = (
		await import(path.join(HERE, 'node_modules/@jitl/quickjs-wasmfile-release-sync/dist/index.mjs'))
	).default;
	const QuickJS = await newQuickJSWASMModuleFromVariant(variant);
	const rt = QuickJS.newRuntime();
	if (opt.memory) rt.setMemoryLimit(opt.memory);
	const vm = rt.newContext();
	const { format } = await import('node:util');
	const out = (fd) => (...args) => {
		fs.writeSync(fd, format(...args.map((h) => vm.dump(h))) + '\n');
	};
	class Exit {
		constructor(code) {
			this.code = code;
		}
	}
	let exitCode = null;
	const con = vm.newObject();
	for (const [k, fd] of [['log', 1], ['info', 1], ['debug', 1], ['error', 2], ['warn', 2]])
		vm.newFunction(k, out(fd)).consume((f) => vm.setProp(con, k, f));
	vm.setProp(vm.global, 'console', con);
	con.dispose();
	const proc = vm.newObject();
	const argv = vm.unwrapResult(vm.evalCode(`(${JSON.stringify(['node', ...(name.startsWith('[') ? [] : [name]), ...cmd.slice(i)])})`));
	vm.setProp(proc, 'argv', argv);
	argv.dispose();
	const penv = vm.unwrapResult(vm.evalCode(`(${JSON.stringify(env)})`));
	vm.setProp(proc, 'env', penv);
	penv.dispose();
	vm.newFunction('exit', (c) => {
		exitCode = c ? vm.getNumber(c) & 255 : 0;
		throw new Error('process.exit'); // unwinds the script
	}).consume((f) => vm.setProp(proc, 'exit', f));
	vm.setProp(vm.global, 'process', proc);
	proc.dispose();

	const report = (h) => {
		const e = vm.dump(h);
		h.dispose();
		if (exitCode !== null) return;
		if (e && typeof e === 'object' && 'message' in e)
			fs.writeSync(2, `Uncaught ${e.name || 'Error'}: ${e.message}\n${e.stack || ''}`);
		else fs.writeSync(2, `Uncaught ${format(e)}\n`);
		exitCode = 1;
	};
	let r;
	try {
		r = vm.evalCode(code, name);
		if (r.error) report(r.error);
		else {
			if (print) fs.writeSync(1, format(vm.dump(r.value)) + '\n');
			r.value.dispose();
		}
		for (;;) {
			const jobs = rt.executePendingJobs();
			if (jobs.error) report(jobs.error);
			else if (jobs.value === 0) break;
		}
	} catch (e) {
		if (e instanceof WebAssembly.RuntimeError || e instanceof RangeError) trap(e, null);
		throw e;
	}
	if (exitCode === null) exitCode = 0;
	return exitCode;
}

const base = opt.bridge ? '' : path.basename(opt.cmd[0]);
let rc;
if (opt.bridge) rc = await (await import('./code.mjs')).serve({ env, preopens, cwd });
else if (opt.cmd[0].endsWith('.wasm')) rc = runWasi(opt.cmd);
else if (/^python(3(\.\d+)?)?$/.test(base)) rc = await runPython(opt.cmd);
else if (base === 'node' || base === 'nodejs' || base === 'qjs') rc = await runJs(opt.cmd);
else
	die(
		127,
		`${opt.cmd[0]}: not found: at --isolation wasm a command is a WebAssembly module ` +
			'(a path ending in .wasm), python3 (Pyodide) or node (QuickJS)'
	);
process.exit(rc);
