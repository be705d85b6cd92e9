// npm run check:signatures (part of npm test): the domain's two calling shapes, read from the source.
// A route-facing operation takes a ServiceContext first and one input after it, nothing more. Queue and
// cron work takes a JobContext ({db, env, requestId, now}, or a Pick of it) first, then one input (and,
// for a helper that runs work with what it sets up, that work as a function). Nothing takes the
// database and the bindings as loose parameters: together they are a JobContext.
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
    const job = types.findIndex((type) => /^(JobContext|Pick<JobContext\b)/.test(type));
    if (job > 0) problems.push(`${where}: the JobContext comes first`);
    const work = types.at(-1)?.startsWith("(") ? 1 : 0;
    if (job === 0 && types.length > 2 + work) problems.push(`${where}: (ctx, input), one input after the JobContext`);
    if (types.includes("Db") && types.includes("Env"))
      problems.push(`${where}: the database with the bindings is a JobContext: (ctx: JobContext, input)`);
  });
}
for (const problem of problems) console.error(problem);
if (problems.length) process.exit(1);
console.log("✔ domain signatures: (ctx: ServiceContext, input) and (ctx: JobContext, input)");
