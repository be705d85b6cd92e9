import { exports } from "cloudflare:workers";

/** A page's first form: where it posts and its hidden inputs. */
export function formOf(page: string): { action: string; fields: Record<string, string> } {
  const form = /<form method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(page);
  if (!form) throw new Error("the page has no form");
  const decodeEntities = (text: string) =>
    text
      .replaceAll("&amp;", "&")
      .replaceAll("&quot;", '"')
      .replaceAll("&#39;", "'")
      .replaceAll("&lt;", "<")
      .replaceAll("&gt;", ">");
  const fields: Record<string, string> = {};
  for (const input of (form[2] as string).matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g))
    fields[input[1] as string] = decodeEntities(input[2] as string);
  return { action: decodeEntities(form[1] as string), fields };
}

/** Posts a simulator page's form as a browser would (form-encoded, redirects not followed). */
export async function submitForm(origin: string, page: string, values: Record<string, string>, ip = "192.0.2.1") {
  const { action, fields } = formOf(page);
  return exports.default.fetch(
    new Request(new URL(action, origin), {
      method: "POST",
      body: new URLSearchParams({ ...fields, ...values }),
      headers: { "CF-Connecting-IP": ip },
      redirect: "manual",
    }),
  );
}
