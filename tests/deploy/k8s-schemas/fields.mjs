// Refuses fields that a kind's schema does not declare, which the schema validators let through.
//
// kubernetes-models and @kubernetes-models/prometheus-operator ship, beside each validator, the
// TypeScript interface generated from the same OpenAPI definition or CRD schema: one property per
// declared field, and an index signature where the schema takes any key (labels, resources,
// x-kubernetes-preserve-unknown-fields). The TypeScript compiler resolves those interfaces, and
// this walk follows each object down them: a key that is neither a property nor covered by an
// index signature is unknown. Unlike tsc's excess-property diagnostic it names every unknown key,
// by its path, not only the first of each object.
//
// Loud rather than lenient: a kind whose interface does not resolve, or a library declaration
// that does not type-check (an unresolved type would turn into `any` and accept everything),
// throws instead of passing.

import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const kHere = path.dirname(fileURLToPath(import.meta.url));
// Never written: the compiler host serves it from memory, here so that node_modules resolves.
const kKindsFile = path.join(kHere, "kinds.generated.ts");

const kOptions = {
  target: ts.ScriptTarget.ES2020,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2020.d.ts"],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: false,
};

// Compiles the interfaces of `schemas` ([{module, interfaceName}], as findSchema returns them)
// once; returns a function (schema, obj) => [{path, message}] listing the obj's unknown fields.
export function createFieldChecker(schemas) {
  const text = schemas.map((s, i) => `export type { ${s.interfaceName} as K${i} } from ${JSON.stringify(s.module)};`).join("\n");
  const host = ts.createCompilerHost(kOptions);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, ...rest) =>
    path.resolve(name) === kKindsFile ? ts.createSourceFile(name, text, ts.ScriptTarget.ES2020) : getSourceFile(name, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === kKindsFile || fileExists(name);
  const program = ts.createProgram([kKindsFile], kOptions, host);
  const problems = ts.getPreEmitDiagnostics(program);
  if (problems.length > 0) {
    const shown = problems.slice(0, 5).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    throw new Error(`the schema types do not compile (${problems.length} errors): ${shown.join("; ")}`);
  }
  const checker = program.getTypeChecker();
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(kKindsFile)));
  const rootTypes = new Map();
  schemas.forEach((s, i) => {
    const symbol = exported.find((e) => e.name === `K${i}`);
    const type = symbol && checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(symbol));
    if (!type || !checker.getPropertyOfType(type, "kind") || !checker.getPropertyOfType(type, "apiVersion")) {
      throw new Error(`${s.module} has no interface ${s.interfaceName}`);
    }
    rootTypes.set(s.module, type);
  });
  return (schema, obj) => {
    const unknown = [];
    walk(checker, obj, rootTypes.get(schema.module), "", unknown);
    return unknown;
  };
}

function isObjectType(type) {
  return (type.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection)) !== 0;
}

// Follows value down type, pushing an entry on `unknown` for each key no member of type declares.
// Values of the wrong shape (an object for a string) are the schema validator's to report.
function walk(checker, value, type, at, unknown) {
  type = checker.getNonNullableType(type);
  if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return;  // free-form in the schema
  if (Array.isArray(value)) {
    const members = type.isUnion() ? type.types : [type];
    const element = members.map((t) => t.getNumberIndexType()).find(Boolean);
    if (element) value.forEach((v, i) => walk(checker, v, element, `${at}/${i}`, unknown));
    return;
  }
  if (value === null || typeof value !== "object") return;
  const members = (type.isUnion() ? type.types : [type]).filter(isObjectType);
  if (members.length === 0) return;
  const index = members.map((t) => t.getStringIndexType()).find(Boolean);
  for (const [key, v] of Object.entries(value)) {
    const where = `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
    const property = members.map((t) => checker.getPropertyOfType(t, key)).find(Boolean);
    if (property) {
      walk(checker, v, checker.getTypeOfSymbol(property), where, unknown);
    } else if (index) {
      walk(checker, v, index, where, unknown);
    } else {
      const names = members.map((t) => checker.typeToString(t)).filter((n) => !n.startsWith("{"));
      unknown.push({ path: where, message: `unknown field ${JSON.stringify(key)}${names.length ? ` (not in ${names.join(" | ")})` : ""}` });
    }
  }
}
