// Build the package: tsc twice (ESM in dist/esm, CommonJS in dist/cjs, each
// with its .d.ts); --tests also compiles test/ into build/test (not shipped).
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const run = (project) => {
  try {
    execFileSync(process.execPath, [tsc, "-p", join(root, project)], { stdio: "inherit" });
  } catch {
    console.error(`build: tsc -p ${project} failed (its errors above)`);
    process.exit(1);
  }
};

rmSync(join(root, "dist"), { recursive: true, force: true });
run("tsconfig.esm.json");
run("tsconfig.cjs.json");
// dist/cjs is CommonJS although the package is "type": "module"
mkdirSync(join(root, "dist/cjs"), { recursive: true });
writeFileSync(join(root, "dist/cjs/package.json"), '{"type": "commonjs"}\n');
if (process.argv.includes("--tests")) {
  rmSync(join(root, "build"), { recursive: true, force: true });
  run("tsconfig.test.json");
}
