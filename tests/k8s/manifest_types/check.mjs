// The Kubernetes manifests against the API's own types: each object is checked as a TypeScript
// value of its kind's type from kubernetes-models (generated from Kubernetes' OpenAPI
// specification, with resource.k8s.io/v1 and the flattened pod resource claims of 1.31 on), so a
// misspelt or misplaced field, a value of the wrong type or a missing required field is an error
// naming the file and the object. Kinds of other groups (the scheduler's configuration, the
// kustomization) are listed as not checked here.
// Usage: node check.mjs MANIFEST.yaml... Exit 0 clean, 1 on a problem, 77 (skip) when the
// packages are not installed (scripts/install-deps.sh runs npm ci here).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, "node_modules", "typescript"))) {
  console.log(`no node_modules in ${here} (scripts/install-deps.sh installs them): skipped`);
  process.exit(77);
}
const ts = (await import("typescript")).default;
const { parseAllDocuments } = await import("yaml");

// The API groups checked: each apiVersion is a kubernetes-models folder whose <Kind> modules
// export the type I<Kind>.
const groups = new Set([
  "v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1",
  "policy/v1", "admissionregistration.k8s.io/v1", "resource.k8s.io/v1",
]);

// One source of every object, each assigned to a constant of its kind's type: TypeScript then
// checks every nested literal, unknown properties included.
const lines = [];
const objects = [];  // {what, first, last}: source lines 1-based
let problems = 0;
for (const file of process.argv.slice(2)) {
  const name = path.relative(process.cwd(), file);
  for (const doc of parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    if (doc.errors.length > 0) {
      console.log(`${name}: not YAML: ${doc.errors[0].message}`);
      problems++;
      continue;
    }
    const object = doc.toJS();
    if (!object) continue;
    const what = `${name}: ${object.kind} ${object.metadata?.name ?? "(no name)"}`;
    if (!groups.has(object.apiVersion)) {
      console.log(`${what}: ${object.apiVersion} is not a core API group: not checked here`);
      continue;
    }
    const n = objects.length;
    lines.push(`import type { I${object.kind} as Kind${n} } from "kubernetes-models/${object.apiVersion}/${object.kind}";`);
    const first = lines.length + 1;
    lines.push(...`export const object${n}: Kind${n} = ${JSON.stringify(object, null, 1)};`.split("\n"));
    objects.push({ what, first, last: lines.length });
  }
}

// Compiled in memory, as if it lay beside node_modules.
const source = path.join(here, "manifests.ts");
// Bundler resolution reads package "exports", which kubernetes-models publishes its types under.
const options = {
  noEmit: true, strict: true, types: [], module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
};
const host = ts.createCompilerHost(options);
const read = host.getSourceFile.bind(host);
host.getSourceFile = (file, version, ...rest) =>
  path.resolve(file) === source
    ? ts.createSourceFile(file, lines.join("\n"), version)
    : read(file, version, ...rest);
const program = ts.createProgram([source], options, host);
for (const d of ts.getPreEmitDiagnostics(program)) {
  problems++;
  const message = ts.flattenDiagnosticMessageText(d.messageText, "; ");
  if (!d.file || path.resolve(d.file.fileName) !== source) {
    console.log(`the check itself: ${message}`);
    continue;
  }
  const line = d.file.getLineAndCharacterOfPosition(d.start).line + 1;
  const object = objects.find((o) => line >= o.first && line <= o.last);
  const at = object ? object.what : `line ${line}`;
  console.log(`${at}: ${message} (at: ${lines[line - 1].trim().slice(0, 80)})`);
}
console.log(`${objects.length} objects checked against the Kubernetes API types (kubernetes-models), ${problems} problems`);
process.exit(problems === 0 ? 0 : 1);
