import { describe, expect, expectTypeOf, it } from "vitest";
import guide from "../../public/docs/guide.md?raw";
import { TRIGGER_REFUSALS } from "../../src/db/triggers";
import { ERROR_CODE_NAMES, ERROR_CODES } from "../../src/lib/errors";
import type { call } from "../harness/api";

// The sources as text, keyed by their path from the project root ("/src/services/ads/commands.ts").
const sources = import.meta.glob("/src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;

const inFolder = (folder: string) => Object.keys(sources).filter((path) => path.startsWith(`/src/${folder}/`));

// The import rules between folders are dependency-cruiser's (.dependency-cruiser.cjs, `npm run
// check:imports`); who the caller is, the compiler keeps to services/shared/access.ts.
describe("layers", () => {
  it("keeps no module-level variables in domain or library code but the per-isolate catalogue cache", () => {
    const offending = [...inFolder("services"), ...inFolder("lib")].filter((path) =>
      /^let /m.test(sources[path] as string),
    );
    // The catalogue is cached per isolate by design (a value with its expiry), never configuration.
    expect(offending).toEqual(["/src/services/catalogue/catalogue.ts"]);
  });
});

describe("the tests", () => {
  // What is not one service's: the HTTP surface (api), attacks across services (security), reading and
  // writing back (write-back), the marketplace simulator, the noisy-neighbour suite, the data spread over
  // shards (shards, and the four-shard suite fourShards), and the helpers.
  const ACROSS_SERVICES = [
    "api",
    "security",
    "write-back",
    "simulator",
    "neighbours",
    "shards",
    "fourShards",
    "harness",
    "fixtures",
    "outside",
  ];

  it("sit in folders named after the services they test, or in one of the folders across services", () => {
    const files = Object.keys(import.meta.glob(["/test/**/*.ts", "/test/**/*.mjs"]));
    const folderOf = (path: string) => path.split("/")[2] ?? "";
    const services = new Set(inFolder("services").map((path) => path.split("/")[3]));
    const misplaced = files.filter((path) => {
      const folder = folderOf(path);
      return path.split("/").length === 3
        ? !["/test/setup.ts", "/test/env.d.ts"].includes(path)
        : !services.has(folder) && !ACROSS_SERVICES.includes(folder);
    });
    expect(misplaced).toEqual([]);
  });
});

describe("the error catalogue", () => {
  // Every other test file as text (a glob leaves out the file that asks); each code is asserted by
  // expectError(…, "code") or `code: "code"` in one of them.
  const tests = import.meta.glob("/test/**/*.test.ts", { query: "?raw", import: "default", eager: true }) as Record<
    string,
    string
  >;

  it("has a test asserting each of its codes", () => {
    const asserted = (code: string) =>
      Object.values(tests).some((text) => new RegExp(`(expectError\\([^;]*"${code}"|code: "${code}")`).test(text));
    expect(ERROR_CODE_NAMES.filter((code) => !asserted(code))).toEqual([]);
  });

  it("is the table of the guide /docs shows (public/docs/guide.md), code by code, each with its meaning", () => {
    const rows = guide.split("\n").flatMap((line) => {
      const row = /^\| `(\w+)` \| (\d{3}) \| (.*) \|$/.exec(line);
      return row ? [{ code: row[1], status: Number(row[2]), meaning: row[3] ?? "" }] : [];
    });
    expect(rows.map(({ code, status }) => ({ code, status }))).toEqual(
      Object.entries(ERROR_CODES).map(([code, { status }]) => ({ code, status })),
    );
    for (const { code, meaning } of rows) expect(meaning.trim().length, `${code}: its meaning`).toBeGreaterThan(10);
  });

  it("knows the database's trigger refusals word for word", () => {
    const migrations = import.meta.glob("/migrations/*.sql", { query: "?raw", import: "default", eager: true });
    const sql = Object.values(migrations).join("\n");
    for (const text of Object.values(TRIGGER_REFUSALS)) expect(sql).toContain(`RAISE(ABORT, '${text}')`);
  });
});

describe("the test harness", () => {
  // Checked by the typecheck of npm test: a call's answer has its route's type, never any.
  it("types an answer from its route: path pattern, method, and the path as the test writes it", () => {
    type Answer<M extends string, P extends string> = Awaited<ReturnType<typeof call<M, P>>>["body"];
    expectTypeOf<Answer<"GET", "/users/5">["data"]>().not.toBeAny();
    expectTypeOf<Answer<"GET", `/users/${number}/`>["data"][number]["userId"]>().toEqualTypeOf<number>();
    expectTypeOf<Answer<"POST", "/publish/batch">["data"][number]["queueItemId"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Answer<"GET", "/ads/?userId=1">["totalItems"]>().toEqualTypeOf<number>();
  });
});

describe("the repository stands alone", () => {
  const documents = {
    ...(import.meta.glob(["/*.md", "/docs/*.md", "/public/docs/*.md"], {
      query: "?raw",
      import: "default",
      eager: true,
    }) as Record<string, string>),
  };

  it("links nothing outside the repository from the README and docs", () => {
    expect(Object.keys(documents)).toContain("/README.md");
    const outside = Object.entries(documents).flatMap(([path, text]) => {
      const depth = path.split("/").length - 2; // folders below the repository root
      const links = [...text.matchAll(/\]\(([^)#\s]+)[^)]*\)/g)].map((m) => m[1] ?? "");
      const escaping = links
        .filter((link) => !/^[a-z]+:/i.test(link))
        .filter((link) => link.split("/").filter((part) => part === "..").length > depth);
      // The team's shared folder beside the clone is not in a clone.
      const shared = text.match(/\.\.\/shared\/\S*/g) ?? [];
      return [...escaping, ...shared].map((link) => `${path}: ${link}`);
    });
    expect(outside).toEqual([]);
  });
});
