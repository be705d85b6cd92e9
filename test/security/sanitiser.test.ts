import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { AD_DESCRIPTION_TAGS, sanitizeHtml, USER_AD_SETTINGS_TAGS } from "../../src/lib/html";
import vectors from "../fixtures/xss-vectors.json";
import { call, defined, expectEnvelope, newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";

/**
 * What "executable" means here: any element but the allowed ones, any attribute at all, or a `<` that
 * does not open or close an allowed tag (so nothing can become a tag when the output is parsed again).
 */
async function executableParts(html: string, allowed: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  await new HTMLRewriter()
    .on("*", {
      element(element) {
        const tag = element.tagName.toLowerCase();
        if (!allowed.includes(tag)) found.push(`<${tag}>`);
        for (const [name] of element.attributes as Iterable<[string, string]>) found.push(`${tag}[${name}]`);
      },
    })
    .onDocument({
      comments() {
        found.push("comment");
      },
    })
    .transform(new Response(html, { headers: { "Content-Type": "text/html" } }))
    .text();
  const tags = new RegExp(`</?(?:${allowed.join("|")})>`, "gi");
  if (html.replace(tags, "").includes("<")) found.push("a stray <");
  if (/javascript:|vbscript:|on\w+=/i.test(html.replace(/&lt;|&gt;/g, "")) && /<[a-z]+\s/i.test(html))
    found.push("an attribute");
  return found;
}

async function expectInert(output: string, allowed: readonly string[], input: string) {
  expect(await executableParts(output, allowed), `${input} → ${output}`).toEqual([]);
  // A fixed point: what is stored parses back to itself.
  expect(await sanitizeHtml(output, allowed), `${input} → ${output}`).toBe(output);
}

describe("the allow-list sanitiser", () => {
  it(`turns each of the ${vectors.length} known vectors into inert text, in both tag sets`, async () => {
    expect(vectors.length).toBeGreaterThanOrEqual(100);
    for (const vector of vectors) {
      for (const allowed of [AD_DESCRIPTION_TAGS, USER_AD_SETTINGS_TAGS]) {
        await expectInert(await sanitizeHtml(vector, allowed), allowed, vector);
      }
    }
  });

  it("keeps allowed markup and plain text as they were", async () => {
    expect(await sanitizeHtml("Mooie <b>leren</b> bank &amp; stoel", AD_DESCRIPTION_TAGS)).toBe(
      "Mooie <b>leren</b> bank &amp; stoel",
    );
    expect(await sanitizeHtml("<ul><li>een</li><li>twee</li></ul>", AD_DESCRIPTION_TAGS)).toBe(
      "<ul><li>een</li><li>twee</li></ul>",
    );
    expect(await sanitizeHtml("prijs < 100 en > 50", AD_DESCRIPTION_TAGS)).toBe("prijs &lt; 100 en &gt; 50");
    expect(await sanitizeHtml("<xmp><script>alert(1)</script></xmp> text", AD_DESCRIPTION_TAGS)).toBe(" text");
    expect(await sanitizeHtml("<textarea><img src=x onerror=alert(1)></textarea>ok", AD_DESCRIPTION_TAGS)).toBe("ok");
    expect(await sanitizeHtml("<<b>script>alert(1)<</b>/script>", ["br"])).toBe(
      "&lt;script&gt;alert(1)&lt;/script&gt;",
    );
  });

  it("never outputs anything executable for generated markup", async () => {
    const tag = fc.constantFrom(
      "b",
      "u",
      "li",
      "script",
      "img",
      "svg",
      "math",
      "style",
      "xmp",
      "textarea",
      "noscript",
      "a",
      "iframe",
      "p",
      "template",
      "plaintext",
      "title",
    );
    const attribute = fc.constantFrom(
      "",
      " onerror=alert(1)",
      ' href="javascript:alert(1)"',
      " src=x",
      " style=x:expression(1)",
    );
    const piece = fc.oneof(
      fc.tuple(tag, attribute).map(([t, a]) => `<${t}${a}>`),
      tag.map((t) => `</${t}>`),
      fc.constantFrom("<", ">", "<!--", "-->", "&lt;", '"', "'", "=", "/", " ", "alert(1)", "<![CDATA[", "]]>", "&"),
      fc.string({ maxLength: 6 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 25 }), async (pieces) => {
        const input = pieces.join("");
        await expectInert(await sanitizeHtml(input, AD_DESCRIPTION_TAGS), AD_DESCRIPTION_TAGS, input);
      }),
      { numRuns: 300 },
    );
  });
});

describe("every HTML field of the API", () => {
  let key: string;
  let userId: number;
  beforeAll(async () => {
    key = (await newClient({ partner: true })).key;
    userId = (await createUser(key)).userId;
  });

  it("stores ad descriptions with nothing executable", async () => {
    const ad = await createAd(key, userId, { externalAdId: 1 });
    for (const vector of vectors) {
      const answer = await call("PUT", "/ads/", { key, body: { adId: ad.adId, description: `${vector} Mooie bank` } });
      // A vector whose element swallows the text after it (an unclosed <script>, <textarea>…) leaves too
      // little to store: refused, and the ad keeps its description.
      if (answer.status === 400) {
        expect(answer.body.errors, vector).toEqual(["description: must be 5-65536 characters after sanitising"]);
        continue;
      }
      expectEnvelope(answer, 200);
      await expectInert(answer.body.data.description, AD_DESCRIPTION_TAGS, vector);
    }
  }, 120_000);

  it("stores user ad settings' header and footer with nothing executable", async () => {
    for (const vector of vectors) {
      const answer = await call("POST", "/user/adsettings/", {
        key,
        body: { userId, settings: [{ portal: "portal_a", header: vector, footer: `${vector}!` }] },
      });
      expectEnvelope(answer, 200);
      const setting = defined(answer.body.data.settings[0]);
      await expectInert(setting.header, USER_AD_SETTINGS_TAGS, vector);
      await expectInert(setting.footer, USER_AD_SETTINGS_TAGS, vector);
    }
  }, 120_000);
});
