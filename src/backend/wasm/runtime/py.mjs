// SPDX-License-Identifier: MIT
// agentjail level 4: Pyodide started the one way both its users need it,
// runner.mjs (python3 commands) and code-worker.mjs (the code
// interpreter's contexts): Python's `js` module an empty object, the
// preopened directories mounted (Emscripten's NODEFS) and no other mount
// possible afterwards (docs/levels.md, "Python is weaker than modules").
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export function inside(dir, p) {
	return p === dir || p.startsWith(dir.endsWith('/') ? dir : dir + '/');
}

// env: Python's os.environ; preopens: directories that exist; cwd: the
// working directory when a preopen holds it.
export async function startPyodide({ env, preopens, cwd }) {
	const { loadPyodide } = await import(path.join(HERE, 'node_modules/pyodide/pyodide.mjs'));
	const py = await loadPyodide({
		indexURL: path.join(HERE, 'node_modules/pyodide') + '/',
		env: { ...env, HOME: env.HOME || '/home/agent' },
		jsglobals: Object.create(null),
		stdout: () => {},
		stderr: () => {},
	});
	const FS = py.FS;
	for (const d of preopens) {
		FS.mkdirTree(d);
		FS.mount(FS.filesystems.NODEFS, { root: d }, d);
	}
	if (cwd && preopens.some((d) => inside(d, cwd))) FS.chdir(cwd);
	FS.mount = () => {
		throw new Error('no mounts at --isolation wasm');
	};
	return py;
}
