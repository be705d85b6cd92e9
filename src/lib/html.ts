/**
 * The one HTML sanitiser, an allow-list on the Workers runtime's streaming HTML parser (HTMLRewriter),
 * never a regex. Allowed tags keep no attributes; other tags are unwrapped to their text; the content
 * of script-like and raw-text elements (whose content the parser does not see as markup) and comments
 * go entirely; `<` and `>` in text are escaped, so text that an unwrapped tag leaves next to other text
 * can never form a tag when the output is parsed again (no mutation XSS). The output is a fixed point:
 * sanitising it again changes nothing.
 */
const DROP_WITH_CONTENT = new Set([
  "script",
  "style",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "noscript",
  "template",
  "svg",
  "math",
  "head",
  "title",
  // Raw-text and RCDATA elements: their content is text to the parser, but markup to whoever unwraps it.
  "xmp",
  "textarea",
  "noembed",
  "noframes",
  "plaintext",
  "listing",
  "select",
  "option",
]);

export const USER_AD_SETTINGS_TAGS = ["p", "b", "strong", "u", "ul", "li", "br"] as const;
export const AD_DESCRIPTION_TAGS = ["b", "strong", "u", "ul", "li", "br"] as const;

const escapeAngles = (text: string) => text.replaceAll("<", "&lt;").replaceAll(">", "&gt;");

async function sanitizeOnce(html: string, allowed: ReadonlySet<string>): Promise<string> {
  const rewriter = new HTMLRewriter()
    .onDocument({
      comments(comment) {
        comment.remove();
      },
      text(chunk) {
        if (/[<>]/.test(chunk.text)) chunk.replace(escapeAngles(chunk.text), { html: true });
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
  let rewritten: string;
  try {
    rewritten = await rewriter
      .transform(new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } }))
      .text();
  } catch {
    // The streaming parser gives up on some non-conforming markup (a raw-text element where it cannot
    // tell how a browser would read it, e.g. `<select><template><style>`): then none of it is markup.
    return escapeAngles(html);
  }
  // What the parser does not hand to the handlers passes through as written: end tags with no open
  // element, and a tag left unfinished at the end (`<img src=x onerror=…` with no `>`, which would close
  // on whatever markup follows the text where it is shown). Every `<` of text is escaped by now, so
  // each `<` left starts a tag: an allowed one is written bare, any other goes, and a `<` that starts no
  // complete tag is escaped.
  return rewritten.replace(/<(\/?)([a-zA-Z][^\s/>]*)[^<>]*>|</g, (_tag, slash: string, name: string | undefined) => {
    if (name === undefined) return "&lt;";
    const tag = name.toLowerCase();
    return allowed.has(tag) ? `<${slash}${tag}>` : "";
  });
}

export async function sanitizeHtml(html: string, allowedTags: readonly string[]): Promise<string> {
  if (!/[<>&]/.test(html)) return html;
  const allowed = new Set(allowedTags);
  // Parsing again must give the same tree; a second pass that changes anything is run until it does not.
  let current = await sanitizeOnce(html, allowed);
  for (let pass = 0; pass < 3; pass += 1) {
    const again = await sanitizeOnce(current, allowed);
    if (again === current) return current;
    current = again;
  }
  // Still moving after four passes: nothing of it is kept as markup.
  return escapeAngles(current);
}
