import fc from "fast-check";
import qs from "qs";
import { describe, expect, it } from "vitest";
import { parseBracketQuery } from "../../src/lib/bracketQuery";

const LIMITS = { depth: 5, arrayLimit: 1000, parameterLimit: 2000 };
const byQs = (search: string) => qs.parse(search, LIMITS);

describe("the bracket-notation query parser", () => {
  it.each([
    ["order[0][field]=price&order[0][direction]=desc", { order: [{ field: "price", direction: "desc" }] }],
    ["adId[]=1&adId[]=2", { adId: ["1", "2"] }],
    ["adId=1&adId=2", { adId: ["1", "2"] }],
    ["a[b][c]=1", { a: { b: { c: "1" } } }],
    ["a[2]=x&a[0]=y", { a: ["y", "x"] }],
    ["a[1001]=x", { a: { "1001": "x" } }],
    ["a[0]=x&a[b]=y", { a: { "0": "x", b: "y" } }],
    ["searchkeyword=fiets+rood&x=%E2%82%AC", { searchkeyword: "fiets rood", x: "€" }],
    ["bad=%E0%A4%A&flag", { bad: "%E0%A4%A", flag: "" }],
    ["a[b][c][d][e][f][g][h]=deep", { a: { b: { c: { d: { e: { f: { "[g][h]": "deep" } } } } } } }],
    ["0=a&1=b", { "0": "a", "1": "b" }],
  ])("parses %s as qs does", (search, expected) => {
    expect(parseBracketQuery(search)).toEqual(expected);
    expect(parseBracketQuery(search)).toEqual(byQs(search));
  });

  it("reads at most parameterLimit pairs", () => {
    const search = Array.from({ length: 2100 }, (_, i) => `p${i}=${i}`).join("&");
    expect(Object.keys(parseBracketQuery(search))).toHaveLength(2000);
  });

  it("agrees with qs on generated queries of the API's shapes", () => {
    const name = fc.constantFrom("adId", "order", "searchattributes", "status", "a", "b");
    const segment = fc.oneof(
      fc.integer({ min: 0, max: 5 }).map((i) => `[${i}]`),
      fc.constantFrom("[field]", "[direction]", "[key]", "[value_equals]", "[portal]"),
    );
    // `[]` only at the end, as clients append to a list (qs folds `a[][]` and `a[][b]` in ways of its own).
    const key = fc
      .tuple(name, fc.array(segment, { maxLength: 3 }), fc.boolean())
      .map(([n, s, append]) => n + s.join("") + (append ? "[]" : ""));
    const value = fc.oneof(
      fc.constantFrom("1", "price", "fiets+rood", "%C3%A9", ""),
      fc.stringMatching(/^[a-z0-9]{0,6}$/),
    );
    // Shapes a client sends: one key path per name, given once or repeated (qs merges a name used
    // as a scalar and as a container in ways no client relies on).
    const query = fc
      .uniqueArray(fc.tuple(key, value, fc.integer({ min: 1, max: 3 })), {
        maxLength: 6,
        selector: ([k]) => k.split("[")[0],
      })
      .map((pairs) => pairs.flatMap(([k, v, times]) => Array.from({ length: times }, () => `${k}=${v}`)).join("&"));
    fc.assert(
      fc.property(query, (search) => {
        expect(parseBracketQuery(search)).toEqual(byQs(search));
      }),
      { numRuns: 500 },
    );
  });
});
