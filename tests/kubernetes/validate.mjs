// Offline schema check of Kubernetes manifests (tests/integration/kubernetes.bats):
// every document of each YAML file against the Kubernetes OpenAPI schema
// that kubernetes-models bundles (ajv), by its apiVersion and kind. An
// agent-sandbox Sandbox (its CRD's schema is not bundled) has its
// spec.podTemplate.spec checked as a core/v1 PodSpec. Unknown kinds fail.
//   node validate.mjs FILE.yaml...   -> "ok FILE KIND/NAME" lines; exit 1 on any error
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const group = (apiVersion) => {
  const [g, v] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  return g === "" ? v : `${g}/${v}`; // kubernetes-models' module path
};

async function modelOf(apiVersion, kind) {
  try {
    const mod = await import(`kubernetes-models/${group(apiVersion)}/${kind}`);
    return mod[kind];
  } catch {
    return null;
  }
}

let bad = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`FAIL ${file}: YAML: ${doc.errors[0].message}`);
      bad++;
      continue;
    }
    const o = doc.toJS();
    if (o === null) continue;
    const what = `${file} ${o.kind}/${o.metadata?.name}`;
    try {
      if (o.apiVersion === "agents.x-k8s.io/v1alpha1" && o.kind === "Sandbox") {
        const { PodSpec } = await import("kubernetes-models/v1/PodSpec");
        const spec = o.spec?.podTemplate?.spec;
        if (!spec) throw new Error("spec.podTemplate.spec is missing");
        new PodSpec(spec).validate();
      } else {
        const Model = await modelOf(String(o.apiVersion), String(o.kind));
        if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
        new Model(o).validate();
      }
      console.log(`ok ${what}`);
    } catch (e) {
      console.log(`FAIL ${what}: ${e.message}`);
      bad++;
    }
  }
}
process.exit(bad ? 1 : 0);
