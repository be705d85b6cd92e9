import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** The marketplace's pages load nothing from elsewhere and cannot be framed (a consent page is a target). */
export const PAGE_HEADERS = {
  "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
};

/** A page of the marketplace's own site: its name on top, so a person sees whose page this is. */
const page = (
  portal: string,
  title: string,
  body: HtmlEscapedString | Promise<HtmlEscapedString>,
) => html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · ${portal}</title>
    <style>
      body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
      header { background: #234; color: #fff; padding: 0.6rem 1rem; font-weight: 600; }
      main { max-width: 26rem; margin: 2rem auto; padding: 0 1rem; }
      label { display: block; margin-top: 0.75rem; }
      input[type="text"], input[type="password"] { width: 100%; padding: 0.4rem; box-sizing: border-box; }
      button { margin-top: 1rem; padding: 0.5rem 1rem; }
      .error { color: #b00020; }
    </style>
  </head>
  <body>
    <header>${portal} (marketplace simulator)</header>
    <main>${body}</main>
  </body>
</html>`;

const hiddenInputs = (params: Record<string, string>) =>
  Object.entries(params).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`);

const credentialFields = html`<label for="username">Username</label>
  <input id="username" name="username" type="text" autocomplete="username" required />
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required />`;

/** The consent page: one form posting the authorization request back with the account's credentials. */
export function consentPage(input: {
  portal: string;
  action: string;
  signupUrl: string;
  params: Record<string, string>;
  error?: string;
}) {
  return page(
    input.portal,
    `Sign in to ${input.portal}`,
    html`<h1>Sign in to ${input.portal}</h1>
      <p>Classified Ads API asks to manage your listings, features, bids and statistics on ${input.portal}.</p>
      ${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ""}
      <form method="post" action="${input.action}">
        ${hiddenInputs(input.params)} ${credentialFields}
        <button type="submit">Allow access</button>
      </form>
      <p>No account yet? <a id="signup" href="${input.signupUrl}">Create a new account</a></p>`,
  );
}

/** Creating an account, then granting the same request in one step. */
export function signupPage(input: { portal: string; action: string; params: Record<string, string>; error?: string }) {
  return page(
    input.portal,
    `Create a ${input.portal} account`,
    html`<h1>Create a ${input.portal} account</h1>
      ${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ""}
      <form method="post" action="${input.action}">
        ${hiddenInputs(input.params)} ${credentialFields}
        <button type="submit">Create account and allow access</button>
      </form>`,
  );
}

/** A request the server will not act on (unknown client, unregistered redirect URI): no redirect. */
export const refusalPage = (portal: string, message: string) =>
  page(portal, "Request refused", html`<h1>Request refused</h1><p class="error" role="alert">${message}</p>`);
