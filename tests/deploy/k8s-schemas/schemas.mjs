// Finds the schema of an object by apiVersion and kind and checks the object against it.
//
// The schemas are the validators that kubernetes-models (the Kubernetes OpenAPI definitions) and
// @kubernetes-models/prometheus-operator (the operator's CRD schemas) compile from those sources:
// types, required fields, enums and formats. They accept fields they do not declare; fields.mjs
// refuses those.

// Packages to look in, in order: a kind's module is <package>/<group>/<version>/<Kind>, the core
// group's version alone ("v1") standing for <group>/<version>.
export const kPackages = ["kubernetes-models", "@kubernetes-models/prometheus-operator"];

const kGroupVersion = /^([a-z0-9]([a-z0-9.-]*[a-z0-9])?\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const kKind = /^[A-Z][A-Za-z0-9]*$/;

// Returns {model, module, interfaceName} for the object's apiVersion and kind, or throws an Error
// saying that no schema covers them. A module that exists but exports no model of exactly this
// apiVersion and kind (a nested type such as v1/PodSpec) is no schema either.
export async function findSchema(apiVersion, kind) {
  if (typeof apiVersion !== "string" || !kGroupVersion.test(apiVersion) ||
      typeof kind !== "string" || !kKind.test(kind)) {
    throw new Error(`apiVersion ${JSON.stringify(apiVersion)} kind ${JSON.stringify(kind)} is not a valid pair`);
  }
  for (const pkg of kPackages) {
    const module = `${pkg}/${apiVersion}/${kind}`;
    let exports;
    try {
      exports = await import(module);
    } catch (e) {
      if (e.code === "ERR_MODULE_NOT_FOUND" || e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED") continue;
      throw e;
    }
    const model = exports[kind];
    if (model && model.apiVersion === apiVersion && model.kind === kind) {
      return { model, module, interfaceName: `I${kind}` };
    }
  }
  throw new Error(`no schema for apiVersion ${apiVersion} kind ${kind} in ${kPackages.join(" or ")}`);
}

// The schema's complaints about obj: [{path, message}], path a JSON pointer ("" for the root).
export function schemaErrors(model, obj) {
  try {
    new model(obj).validate();
    return [];
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    return e.errors.map((err) => ({ path: err.instancePath, message: describe(err) }));
  }
}

function describe(err) {
  if (err.keyword === "required") return `required field ${JSON.stringify(err.params.missingProperty)} is missing`;
  if (err.keyword === "enum") return `${err.message}: ${err.params.allowedValues.join(", ")}`;
  return err.message;
}
