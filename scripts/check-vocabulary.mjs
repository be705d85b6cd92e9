// The words the API shares are spelled once, in src/lib/vocabulary.ts: portals by role, ad types, ad
// statuses and job kinds (the marketplaces themselves in src/lib/marketplaces.ts, their profiles). This fails on a
// literal list, union or pattern alternation of their values anywhere else in src/ (the simulator is another Worker,
// with a vocabulary of its own), naming the file and line to change.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const VOCABULARY = "src/lib/vocabulary.ts";
/** The marketplaces' profiles, where each marketplace is named once (vocabulary.ts takes the list from there). */
const PROFILES = "src/lib/marketplaces.ts";
/** Two values of one word next to each other in a list (`,`) or a union (`|`). */
const SPELLINGS = [
  ["portals", /"portal_(a|b|own)"\s*[,|]\s*"(portal_(a|b|own)|website)"/],
  // …and inside a regular expression's alternation, /^(portal_a|portal_b)$/.
  ["portals in a pattern", /portal_(a|b|own)\s*\|\s*(portal_(a|b|own)|website)/],
  ["ad types", /"(supply|demand)"\s*[,|]\s*"(supply|demand)"/],
  ["ad statuses", /"(concept|active|archive)"\s*[,|]\s*"(concept|active|archive)"/],
  // (A filter naming some actions, `inArray(action, ["update", "unpublish"])`, is a predicate, not a spelling.)
  ["job kinds", /"(publish|placement|update|unpublish|feature)"\s*\|\s*"(publish|placement|update|unpublish|feature)"/],
  // SQL that maps a job's action to its kind is built from JOB_KINDS (jobKindSql).
  ["job kinds in SQL", /WHEN\s+'publish'\s+THEN\s+'placement'/i],
];

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (/\.ts$/.test(entry.name) && !entry.name.endsWith(".d.ts")) yield path;
  }
}

const failures = [];
for (const file of sources(join(root, "src"))) {
  const name = relative(root, file);
  if (name === VOCABULARY || name === PROFILES) continue;
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, at) => {
      for (const [word, pattern] of SPELLINGS)
        if (pattern.test(line))
          failures.push(`${name}:${at + 1}: ${word} spelled out; import them from ${VOCABULARY}: ${line.trim()}`);
    });
}
if (failures.length > 0) {
  console.error(failures.join("\n"));
  process.exit(1);
}
console.log(`✔ portals, ad types, ad statuses and job kinds are spelled only in ${VOCABULARY} and ${PROFILES}`);
