// SPDX-License-Identifier: MIT
// agentjail level 4: one code context of the code interpreter (code.mjs
// starts one worker thread per context). It keeps one Pyodide instance
// and one namespace: variables live from one run to the next. Messages
// from code.mjs: {t: 'run', code, history}; to it: {t: 'ready'},
// {t: 'fail', msg}, {t: 'out', fd, data}, {t: 'ev', ev} (display, result,
// error) and {t: 'done', count} at the end of each run. code.mjs
// interrupts a run through the shared interrupt buffer (KeyboardInterrupt).
import { parentPort, workerData } from 'node:worker_threads';

import { inside, startPyodide } from './py.mjs';

// A cell: its last expression's value is the result (as IPython does); a
// trailing ';' hides it. Tracebacks leave out this function's frame; the
// cell's source is in linecache, so they show its lines.
const CELL = `
import ast as _ast, builtins as _b, json as _json, linecache as _lc, sys as _sys, traceback as _tb
import _agentjail

_MIMES = (('text/html', '_repr_html_'), ('text/markdown', '_repr_markdown_'),
          ('image/svg+xml', '_repr_svg_'), ('text/latex', '_repr_latex_'),
          ('application/json', '_repr_json_'))
_BUNDLE_MAX = 12 << 20

def _bundle(v):
    out = {}
    for mime, meth in _MIMES:
        f = getattr(type(v), meth, None)
        if f is not None:
            try:
                r = f(v)
            except Exception:
                r = None
            if isinstance(r, str) or (mime == 'application/json' and r is not None):
                out[mime] = r
    out['text/plain'] = repr(v)
    for k in [k for k, x in out.items() if len(_json.dumps(x, default=str)) > _BUNDLE_MAX]:
        del out[k]  # too big for one line of the service's (16 MiB): said instead
        out['text/plain'] = '[%s output over %d MiB left out]' % (k, _BUNDLE_MAX >> 20)
    return out

def display(*objs):
    for o in objs:
        _agentjail.event(_json.dumps({'type': 'display', 'data': _bundle(o)}, default=str))

_b.display = display

# Pyodide's time.sleep blocks without looking at the interrupt buffer: a
# loop of short sleeps lets a timeout or an interrupt stop it
import time as _time
def _sleep(secs, _orig=_time.sleep, _now=_time.monotonic):
    end = _now() + secs
    while (left := end - _now()) > 0:
        _orig(min(left, 0.05))
_time.sleep = _sleep
_ns = {'__name__': '__main__', '__builtins__': _b}

def _cell(code, count):
    name = '<cell-%d>' % count
    _lc.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = _ast.parse(code, name, 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr) and not code.rstrip().endswith(';'):
            last = _ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, 'exec'), _ns)
        if last is not None:
            v = eval(compile(last, name, 'eval'), _ns)
            if v is not None:
                _ns['_'] = v
                return _json.dumps({'type': 'result', 'data': _bundle(v)}, default=str)
        return None
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ and not isinstance(e, SyntaxError) else None
        lines = _tb.format_exception(type(e), e, tb)
        return _json.dumps({'type': 'error', 'name': type(e).__name__, 'value': str(e),
                            'traceback': lines}, default=str)
    finally:
        try:
            _sys.stdout.flush()
            _sys.stderr.flush()
        except Exception:
            pass

_cell
`;

const post = (m) => parentPort.postMessage(m);

let py, cell;
try {
	const { env, preopens, cwd, ctxCwd, interrupt } = workerData;
	py = await startPyodide({ env, preopens, cwd });
	if (ctxCwd) {
		// a context's own directory: one the sandbox's Python sees
		if (!preopens.some((d) => inside(d, ctxCwd)))
			throw new Error(`cwd ${ctxCwd}: outside the directories Python sees (${preopens.join(', ')})`);
		try {
			py.FS.chdir(ctxCwd);
		} catch {
			throw new Error(`cwd ${ctxCwd}: not a directory`);
		}
	}
	for (const fd of [1, 2]) {
		const dec = new TextDecoder('utf-8');
		const write = (b) => {
			const data = dec.decode(b, { stream: true });
			if (data) post({ t: 'out', fd, data });
			return b.length;
		};
		(fd === 1 ? py.setStdout : py.setStderr).call(py, { write });
	}
	py.setStdin({ read: () => 0 }); // no stdin: input() gets EOF
	py.registerJsModule('_agentjail', { event: (s) => post({ t: 'ev', ev: JSON.parse(s) }) });
	py.setInterruptBuffer(new Int32Array(interrupt));
	cell = py.runPython(CELL);
	post({ t: 'ready' });
} catch (e) {
	post({ t: 'fail', msg: e && e.message ? e.message : String(e) });
	process.exit(1);
}

let count = 0;
parentPort.on('message', (m) => {
	if (m.t !== 'run') return;
	const n = m.history ? count + 1 : count;
	let r;
	try {
		r = cell(m.code, n);
	} catch (e) {
		// a fatal error of the runtime (a trap, out of linear memory): this
		// context is gone; code.mjs restarts it
		post({ t: 'fail', msg: e && e.message ? e.message : String(e) });
		process.exit(1);
	}
	if (m.history) count = n;
	if (r) {
		const ev = JSON.parse(r);
		if (ev.type === 'result') ev.execution_count = count;
		post({ t: 'ev', ev });
	}
	post({ t: 'done', count: m.history ? count : null });
});
