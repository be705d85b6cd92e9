// Guards wrangler.toml's [alias] entries, which swap modules of dependencies for the stand-ins in
// build/ by the exact import path the dependencies' own modules use. Reads the production build's
// esbuild metafile (npm run build:check writes it) and fails, naming the entry, when no bundled module
// imports that path any more (the stand-in replaces nothing), when the module the path names is gone,
// or when a name that a bundled module imports through the path is missing from the module or from its
// stand-in (the dependency changed under the stand-in).
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse } from "smol-toml";

const root = resolve(import.meta.dirname, "..");
const aliases = parse(readFileSync(resolve(root, "wrangler.toml"), "utf8")).alias ?? {};
const { inputs } = JSON.parse(readFileSync(resolve(root, "dist/bundle-meta.json"), "utf8"));

const exportsOf = async (file) => new Set(Object.keys(await import(pathToFileURL(file).href)));
const escaped = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The names an importer takes by name through `specifier` (none for `* as` and `export *`). */
function namedImports(importer, specifier) {
  const source = readFileSync(resolve(root, importer), "utf8");
  const clauses = new RegExp(`(?:import|export)\\s*\\{([^}]*)\\}\\s*from\\s*["']${escaped(specifier)}["']`, "g");
  return [...source.matchAll(clauses)].flatMap(([, list]) =>
    list
      .split(",")
      .map(
        (part) =>
          part
            .trim()
            .replace(/^type\s+/, "")
            .split(/\s+as\s+/)[0],
      )
      .filter(Boolean),
  );
}

/** The module the path names as the dependency has it: resolved from the importer, or the package itself. */
const originalOf = (importer, specifier) =>
  specifier.startsWith(".")
    ? resolve(root, dirname(importer), specifier)
    : resolve(
        root,
        "node_modules",
        specifier,
        JSON.parse(readFileSync(resolve(root, "node_modules", specifier, "package.json"))).module,
      );

const failures = [];
for (const [specifier, standIn] of Object.entries(aliases)) {
  const entry = `[alias] "${specifier}" = "${standIn}"`;
  const importers = Object.entries(inputs).flatMap(([file, input]) =>
    input.imports.some((i) => i.original === specifier) ? [file] : [],
  );
  if (importers.length === 0) {
    failures.push(`${entry}: no bundled module imports this path any more; remove the entry and its stand-in`);
    continue;
  }
  const offered = await exportsOf(resolve(root, standIn));
  for (const importer of importers) {
    const original = originalOf(importer, specifier);
    let available;
    try {
      available = await exportsOf(original);
    } catch (error) {
      failures.push(`${entry}: ${importer} imports it, but the module it names does not load (${error.message})`);
      continue;
    }
    const names = namedImports(importer, specifier);
    const gone = names.filter((name) => !available.has(name));
    const lacking = names.filter((name) => !offered.has(name));
    if (gone.length > 0)
      failures.push(
        `${entry}: ${importer} imports ${gone.join(", ")}, which the dependency's module no longer exports; rewrite the stand-in against it`,
      );
    if (lacking.length > 0)
      failures.push(`${entry}: ${importer} imports ${lacking.join(", ")}, which the stand-in lacks`);
  }
}
if (failures.length > 0) {
  console.error(failures.join("\n"));
  process.exit(1);
}
console.log(`✔ ${Object.keys(aliases).length} [alias] entries each replace a module the bundle imports, name for name`);
