// npm run check:signatures (part of npm test): the domain's one signature, read from the source.
// An exported operation that takes a ServiceContext takes it first and one input after it, nothing
// more; anything that takes both the database and the bindings takes them as (db, env, …).
import { readdirSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const sources = (folder) =>
  readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    return entry.isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });

const problems = [];
const program = ts.createProgram(sources("src/services"), { noResolve: true });
for (const file of program.getSourceFiles().filter((f) => f.fileName.startsWith("src/services/"))) {
  ts.forEachChild(file, (node) => {
    const exported = node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!ts.isFunctionDeclaration(node) || !exported) return;
    const types = node.parameters.map((p) => p.type?.getText(file) ?? "");
    const where = `${file.fileName}: ${node.name?.text}(${types.join(", ")})`;
    const context = types.indexOf("ServiceContext");
    if (context > 0) problems.push(`${where}: the ServiceContext comes first`);
    if (context === 0 && types.length > 2) problems.push(`${where}: (ctx, input), one input after the context`);
    const [db, env] = [types.indexOf("Db"), types.indexOf("Env")];
    if (db >= 0 && env >= 0 && env < db) problems.push(`${where}: (db, env, …), the database first`);
  });
}
for (const problem of problems) console.error(problem);
if (problems.length) process.exit(1);
console.log("✔ domain signatures: (ctx, input) and (db, env, …)");
