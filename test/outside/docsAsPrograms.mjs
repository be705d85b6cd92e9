// The docs as programs: every TypeScript block and every shell block of README.md, docs/*.md and
// client/README.md runs exactly as printed against `npm run dev` on http://localhost:8787, and a response
// printed under a command (`# {…}`) is compared by shape with what the command answered.
//
// How a page is written so that it runs (docs/operating.md#docs-that-run):
// - ```ts blocks of a page are one program, in order (a later block uses what an earlier one made); it is
//   type-checked strictly against the packed client, then run with `npx tsx`. A program that exports
//   `receive(request)` is a webhook receiver: it is handed a signed delivery and a tampered one.
// - ```sh blocks run in one bash session for all pages, README.md first, then docs/calling.md (whose walk
//   makes $K, $J, $B, $U and $AD), publishing.md ($JOB), events-and-webhooks.md and operating.md, then the
//   other pages by name.
// - A JSON comment under a command, or after it on its line, is its printed response: every key printed
//   is in the answer with the same type, booleans and `code`s equal; `…` stands for what is left out.
// - A block that cannot run here says why in its info string: ```sh {not run: deploys to Cloudflare}.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";

const FENCE = /^```(\w*)(?:\s+\{not run: ([^}]+)\})?\s*$/;

/** The fenced blocks of a Markdown page: language, the reason it is not run (if any), text, line. */
export function blocksOf(markdown) {
  const blocks = [];
  let open = null;
  markdown.split("\n").forEach((line, index) => {
    if (!line.startsWith("```")) {
      open?.lines.push(line);
      return;
    }
    if (open) {
      blocks.push({ language: open.language, notRun: open.notRun, text: open.lines.join("\n"), line: open.line });
      open = null;
      return;
    }
    const [, language = "", notRun] = FENCE.exec(line) ?? [];
    open = { language, notRun, lines: [], line: index + 1 };
  });
  return blocks;
}

/** What a printed `…` leaves out: more keys of an object, more items of a list. */
export const ELIDED = "…";

/**
 * A printed response in a comment: JSON once each `…` is read as what it leaves out (an `ELIDED` key in an
 * object, an `ELIDED` item in a list), or undefined (prose).
 */
export function printedJson(text) {
  const trimmed = text.trim();
  if (!/^[[{]/.test(trimmed)) return undefined;
  const open = [];
  let inString = false;
  let json = "";
  for (let at = 0; at < trimmed.length; at += 1) {
    const char = trimmed[at];
    if (inString) {
      json += char;
      if (char === "\\") {
        // An escaped character is the string's, whatever it is.
        at += 1;
        json += trimmed[at] ?? "";
      } else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
      json += char;
    } else if (char === "{" || char === "[") {
      open.push(char);
      json += char;
    } else if (char === "}" || char === "]") {
      open.pop();
      json += char;
    } else if (char === "…") json += open.at(-1) === "{" ? `"${ELIDED}":true` : `"${ELIDED}"`;
    else json += char;
  }
  try {
    return JSON.parse(json);
  } catch {
    throw new Error(`a printed response is not JSON once its … are read: ${trimmed}`);
  }
}

const kind = (value) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/**
 * The fields whose values differ from run to run (ids, times, secrets, links, positions) or with the
 * deployment (its rate limit): held to their type only. Every other value is held to what is printed; in
 * text, numbers (ids in a message) are not, and a printed "…" stands for any text.
 */
const VARYING =
  /(^|\.)(\w*Id|\w*Ids|eventId|cursor|nextCursor|created|updated|occurredAt|timestamp|time|\w*Date|\w*At|\w*Until|\w*Since|\w*Expire|secret|token|activationtoken|link|redirect|url|location|latencyMs|durationMs|statusCode|error|lastError|sizeBytes|messageId|version|migration|key|ETag|etag|webhook-id|remoteAdId|account|rate|burst)$/;

/** Where `actual` differs from `printed` (empty when it holds): keys, types, and every value that is not VARYING. */
export function shapeProblems(printed, actual, path = "") {
  if (kind(printed) !== kind(actual)) return [`${path || "the answer"}: ${kind(actual)}, printed ${kind(printed)}`];
  if (Array.isArray(printed)) {
    const items = printed.filter((item) => item !== ELIDED);
    if (items.length > 0 && actual.length === 0) return [`${path}: empty, printed with items`];
    if (printed.length === 0 && actual.length > 0) return [`${path}: ${actual.length} items, printed empty`];
    return items.flatMap((item, i) => (i < actual.length ? shapeProblems(item, actual[i], `${path}[${i}]`) : []));
  }
  if (kind(printed) === "object") {
    const elided = ELIDED in printed;
    const unprinted = elided
      ? []
      : Object.keys(actual)
          .filter((key) => !(key in printed))
          .map((key) => `${path ? `${path}.` : ""}${key}: answered, not printed`);
    return [
      ...unprinted,
      ...Object.entries(printed)
        .filter(([key]) => key !== ELIDED)
        .flatMap(([key, value]) =>
          key in actual
            ? shapeProblems(value, actual[key], path ? `${path}.${key}` : key)
            : [`${path}.${key}: missing`],
        ),
    ];
  }
  const numbersOut = (value) => (typeof value === "string" ? value.replaceAll(/\d+/g, "#") : value);
  if (printed === ELIDED || VARYING.test(path) || numbersOut(printed) === numbersOut(actual)) return [];
  return [`${path}: ${JSON.stringify(actual)}, printed ${JSON.stringify(printed)}`];
}

/**
 * A page's shell blocks as one script, each command with a printed response writing its output to a
 * numbered file; answers the script and the printed responses by number.
 */
export function instrumentShell(blocks, outputs) {
  const printed = [];
  const lines = [];
  for (const block of blocks) {
    const source = block.text.split("\n");
    for (let i = 0; i < source.length; i += 1) {
      const line = source[i];
      const trailing = /^(.*?\S)\s+#\s+([[{].*)$/.exec(line);
      let command = trailing ? trailing[1] : line;
      let response = trailing ? trailing[2] : undefined;
      // A comment below the command that starts with { or [ is its response, continued by `#  ` lines.
      if (!response && !line.trim().startsWith("#") && /^#\s+[[{]/.test(source[i + 1] ?? "")) {
        response = source[i + 1].replace(/^#\s+/, "");
        i += 1;
        while (/^#\s{2,}\S/.test(source[i + 1] ?? "")) {
          response += source[i + 1].replace(/^#\s+/, "");
          i += 1;
        }
      }
      // Continuation lines of a printed response that follows on its own line (` #  …`).
      while (response && trailing && /^\s+#\s{2,}\S/.test(source[i + 1] ?? "")) {
        response += source[i + 1].replace(/^\s+#\s+/, "");
        i += 1;
      }
      const expected = response === undefined ? undefined : printedJson(response);
      if (expected !== undefined) {
        const file = join(outputs, `${printed.length}.out`);
        // The command without its prose comment, its output kept for the comparison.
        command = command.replace(/\s+#\s.*$/, "");
        printed.push({ command: command.trim(), expected, file, where: `${block.page}:${block.line}` });
        command = `${command} > ${file}; cat ${file}; echo`;
      }
      lines.push(command);
    }
  }
  return { script: lines.join("\n"), printed };
}

/** The pages that go on from the walk in calling.md, in the order they use what it made. */
const WALK = ["calling.md", "publishing.md", "events-and-webhooks.md", "operating.md"];

/** The Markdown pages whose blocks run, in the order their shell blocks do. */
export async function pagesOf(repo) {
  const docs = (await readdir(join(repo, "docs"))).filter((name) => name.endsWith(".md")).sort();
  const ordered = [...WALK, ...docs.filter((name) => !WALK.includes(name))];
  return [
    join(repo, "README.md"),
    ...ordered.map((name) => join(repo, "docs", name)),
    join(repo, "client", "README.md"),
  ];
}

/**
 * Runs the docs: the TypeScript programs in `project` (where the packed client and tsx are installed)
 * and the shell blocks from the repository's root, reporting each through `check`.
 */
export async function runDocs({ repo, project, tsc, check, env }) {
  // The comparison itself first: a changed boolean, a missing key, a list answered empty all fail it.
  const printed = printedJson('{"result":true,"data":[{"adId":1,…}],…}');
  check(
    shapeProblems(printed, { result: false, data: [{ adId: 1 }] }).length === 1 &&
      shapeProblems(printed, { result: true, data: [{ id: 1 }] }).length === 1 &&
      shapeProblems(printed, { result: true, data: [] }).length === 1 &&
      shapeProblems(printed, { result: true, data: [{ adId: 7, title: "x" }], page: 1 }).length === 0 &&
      shapeProblems(printedJson('{"result":true,"data":{"name":"a"}}'), { result: true, data: { name: "b" } })
        .length === 1 &&
      shapeProblems(printedJson('{"result":true,"data":{"name":"a"}}'), { result: true, data: { name: "a", x: 1 } })
        .length === 1,
    "a printed response is held to the answer's keys, types and values (ids, times and links by type), with … for what is left out",
  );
  const pages = await pagesOf(repo);
  const shell = [];
  for (const page of pages) {
    const name = relative(repo, page);
    const blocks = blocksOf(await readFile(page, "utf8")).map((block) => ({ ...block, page: name }));
    for (const block of blocks.filter((b) => b.notRun))
      console.log(`skip ${name}:${block.line} (${block.language}): not run here, ${block.notRun}`);
    shell.push(...blocks.filter((b) => b.language === "sh" && !b.notRun));
    const programs = blocks.filter((b) => b.language === "ts" && !b.notRun);
    if (programs.length > 0) await runProgram({ name, programs, project, tsc, check, env });
  }
  await runShell({ repo, blocks: shell, check, env });
}

async function runProgram({ name, programs, project, tsc, check, env }) {
  const file = `${name.replaceAll(/[^\w]+/g, "-")}.ts`;
  await writeFile(join(project, file), `${programs.map((b) => b.text).join("\n")}\n`);
  const config = `tsconfig.${file}.json`;
  const base = JSON.parse(await readFile(join(project, "tsconfig.json"), "utf8"));
  await writeFile(join(project, config), JSON.stringify({ ...base, files: [file] }));
  const typed = spawnSync(process.execPath, [tsc, "-p", config, "--noEmit"], { cwd: project, encoding: "utf8" });
  check(typed.status === 0, `${name}: its TypeScript (${programs.length} block(s)) type-checks strictly`);
  if (typed.status !== 0) console.error(typed.stdout);
  const ran = spawnSync("npx", ["tsx", file], { cwd: project, encoding: "utf8", env, timeout: 180_000 });
  check(ran.status === 0, `${name}: npx tsx ${file} runs against npm run dev`);
  if (ran.status !== 0) console.error(ran.stdout, ran.stderr);
  else console.log(ran.stdout.trim().split("\n").slice(-5).join("\n"));
  const source = programs.map((b) => b.text).join("\n");
  if (/export (async )?function receive\(/.test(source)) await checkReceiver({ name, file, project, check, env });
}

/** A receiver printed in the docs takes a signed delivery (204) and refuses a tampered one (400). */
async function checkReceiver({ name, file, project, check, env }) {
  const probe = `probe-${file}`;
  await writeFile(
    join(project, probe),
    `import { Webhook } from "standardwebhooks";
import { receive } from "./${file.replace(/\.ts$/, "")}";
const body = JSON.stringify({ type: "webhook.test", timestamp: "2026-11-26 12:00:00", data: { eventId: 1 } });
const headers = { "webhook-id": "evt_1", "webhook-timestamp": String(Math.floor(Date.now() / 1000)) };
const signature = new Webhook(process.env.WEBHOOK_SECRET ?? "").sign("evt_1", new Date(), body);
const signed = await receive(new Request("http://receiver.test", { method: "POST", body, headers: { ...headers, "webhook-signature": signature } }));
const tampered = await receive(new Request("http://receiver.test", { method: "POST", body: body.replace("1}", "2}"), headers: { ...headers, "webhook-signature": signature } }));
console.log(JSON.stringify([signed.status, tampered.status]));
`,
  );
  const ran = spawnSync("npx", ["tsx", probe], { cwd: project, encoding: "utf8", env });
  const statuses = ran.stdout.trim().split("\n").at(-1);
  check(
    statuses === "[204,400]",
    `${name}: its receive() takes a signed delivery and refuses a tampered one (${statuses})`,
  );
}

async function runShell({ repo, blocks, check, env }) {
  const outputs = join(repo, ".wrangler", "docs-outputs");
  await mkdir(outputs, { recursive: true });
  const { script, printed } = instrumentShell(blocks, outputs);
  // A call that may fail unseen: one meant to succeed without curl -f (or api), a refusal shown without
  // printing it (`refusal`), or a helper whose curl neither fails on an error nor keeps only the last
  // attempt's answer (a 429 waited out with --retry into a file, which curl starts over).
  const shownRefusals = new Set(printed.filter((p) => p.expected?.result === false).map((p) => p.command));
  const failsOnError = (command) => /\bcurl\s+-\w*f/.test(command);
  const problem = (command) => {
    if (/^refusal\s/.test(command)) return !shownRefusals.has(command);
    if (!/\bcurl\s/.test(command) || failsOnError(command)) return false;
    if (/^\w+\(\) \{/.test(command)) return !(/--retry/.test(command) && /\s-o\s/.test(command));
    // Without a key there is no rate to wait out: a refusal shown with plain curl is what it prints.
    return /"\$K"/.test(command) || !shownRefusals.has(command);
  };
  const unchecked = script
    .split("\n")
    .map((line) => line.replace(/ > \S+\.out; cat .*$/, "").trim())
    .filter(problem);
  check(
    unchecked.length === 0,
    `every shell call stops on an error (curl -f, or api) unless it prints the refusal it shows ${unchecked.join(" | ")}`,
  );
  const file = join(outputs, "docs.sh");
  await writeFile(file, `set -euo pipefail\n${script}\n`);
  let ran = true;
  try {
    execFileSync("bash", [file], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"], timeout: 300_000 });
  } catch (error) {
    ran = false;
    console.error(String(error.stdout), String(error.stderr));
  }
  check(ran, `the shell blocks of ${new Set(blocks.map((b) => b.page)).size} pages run in one bash session`);
  for (const { command, expected, file: output, where } of printed) {
    let problems;
    try {
      problems = shapeProblems(expected, JSON.parse(await readFile(output, "utf8")));
    } catch (error) {
      problems = [String(error)];
    }
    check(problems.length === 0, `${where}: ${command.slice(0, 90)} answers as printed ${problems.join("; ")}`);
  }
}
