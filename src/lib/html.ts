/**
 * HTML sanitising with the Workers runtime's streaming HTML parser (HTMLRewriter), never a regex:
 * allowed tags keep no attributes, other tags are unwrapped to their text, and the content of
 * script-like elements and comments goes entirely.
 */
const DROP_WITH_CONTENT = new Set([
  "script",
  "style",
  "iframe",
  "object",
  "embed",
  "noscript",
  "template",
  "svg",
  "math",
  "head",
  "title",
]);

export const USER_AD_SETTINGS_TAGS = ["p", "b", "strong", "u", "ul", "li", "br"] as const;
export const AD_DESCRIPTION_TAGS = ["b", "strong", "u", "ul", "li", "br"] as const;

export async function sanitizeHtml(html: string, allowedTags: readonly string[]): Promise<string> {
  if (!/[<&]/.test(html)) return html;
  const allowed = new Set(allowedTags);
  const rewriter = new HTMLRewriter()
    .onDocument({
      comments(comment) {
        comment.remove();
      },
    })
    .on("*", {
      element(element) {
        const tag = element.tagName.toLowerCase();
        if (DROP_WITH_CONTENT.has(tag)) element.remove();
        else if (!allowed.has(tag)) element.removeAndKeepContent();
        else for (const [name] of [...element.attributes] as [string, string][]) element.removeAttribute(name);
      },
    });
  return rewriter.transform(new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } })).text();
}
