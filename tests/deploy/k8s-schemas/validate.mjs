#!/usr/bin/env node
// Validates Kubernetes objects against the schema of their apiVersion and kind (schemas.mjs) and
// refuses fields the schema does not declare (fields.mjs).
//
//   node validate.mjs [--json] FILE...      (FILE: a YAML or JSON stream of objects; - is stdin)
//
// Prints one line per problem, "FILE: Kind/name [template] field.path: message", then a count;
// --json prints {"objects": [{file, index, kind, name, source, errors: [{field, message}]}]}.
// Exits 0 when every object is valid, 1 when one is not (an object of a kind with no schema, or a
// document that does not parse, is not valid), 2 on a usage error or when the schemas cannot load.

import fs from "node:fs";
import YAML from "yaml";
import { createFieldChecker } from "./fields.mjs";
import { findSchema, schemaErrors } from "./schemas.mjs";

// "/spec/containers/0/app.kubernetes.io~1name" -> 'spec.containers[0]["app.kubernetes.io/name"]'
function field(pointer) {
  if (pointer === "") return "(object)";
  return pointer.slice(1).split("/").map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~")).reduce((out, key) => {
    if (/^[0-9]+$/.test(key)) return `${out}[${key}]`;
    if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key)) return out ? `${out}.${key}` : key;
    return `${out}[${JSON.stringify(key)}]`;
  }, "");
}

// Every non-empty document of the file, YAML 1.1 as Kubernetes reads manifests (0440 is octal).
function readObjects(file) {
  const text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
  return YAML.parseAllDocuments(text, { version: "1.1" }).map((doc, index) => {
    // helm template's "# Source: TEMPLATE" after each "---", where the parser keeps it.
    const comments = `${doc.commentBefore ?? ""}\n${doc.contents?.commentBefore ?? ""}`;
    const source = /Source: (\S+)/.exec(comments)?.[1] || "";
    if (doc.errors.length > 0) return { file, index, source, parseError: doc.errors[0].message };
    return { file, index, source, obj: doc.toJS({ maxAliasCount: 100 }) };
  }).filter((o) => o.parseError || (o.obj !== null && o.obj !== undefined));
}

async function validateAll(entries) {
  const schemas = new Map();
  for (const e of entries) {
    const key = `${e.obj?.apiVersion} ${e.obj?.kind}`;
    if (e.parseError || schemas.has(key)) continue;
    schemas.set(key, await findSchema(e.obj.apiVersion, e.obj.kind).catch((err) => ({ missing: err.message })));
  }
  const found = [...schemas.values()].filter((s) => !s.missing);
  const unknownFields = found.length > 0 ? createFieldChecker(found) : null;
  return entries.map((e) => {
    const out = { file: e.file, index: e.index, source: e.source, kind: e.obj?.kind ?? "", name: e.obj?.metadata?.name ?? "" };
    if (e.parseError) return { ...out, errors: [{ field: "(document)", message: `does not parse: ${e.parseError}` }] };
    if (typeof e.obj !== "object" || Array.isArray(e.obj)) return { ...out, errors: [{ field: "(document)", message: "is not an object" }] };
    const schema = schemas.get(`${e.obj.apiVersion} ${e.obj.kind}`);
    if (schema.missing) return { ...out, errors: [{ field: "(object)", message: schema.missing }] };
    const errors = [...schemaErrors(schema.model, e.obj), ...unknownFields(schema, e.obj)];
    return { ...out, errors: errors.map((x) => ({ field: field(x.path), message: x.message })) };
  });
}

async function main(argv) {
  const json = argv.includes("--json");
  const files = argv.filter((a) => a !== "--json");
  if (files.length === 0 || files.some((f) => f.startsWith("--"))) {
    process.stderr.write("usage: node validate.mjs [--json] FILE...   (- reads stdin)\n");
    return 2;
  }
  let results;
  try {
    results = await validateAll(files.flatMap(readObjects));
  } catch (err) {
    process.stderr.write(`validate: ${err.message}\n`);
    return 2;
  }
  const invalid = results.filter((r) => r.errors.length > 0);
  if (json) {
    process.stdout.write(JSON.stringify({ objects: results }, null, 1) + "\n");
  } else {
    for (const r of invalid) {
      const where = `${r.file}: ${r.kind || "?"}/${r.name || `#${r.index}`}${r.source ? ` [${r.source}]` : ""}`;
      for (const e of r.errors) process.stdout.write(`${where} ${e.field}: ${e.message}\n`);
    }
    process.stdout.write(`${results.length - invalid.length} of ${results.length} objects valid\n`);
  }
  return invalid.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
