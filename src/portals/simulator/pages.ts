import { html } from "hono/html";
import { page } from "../../lib/htmlPage";

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
  page(`${portal}: request refused`, html`<h1>Request refused</h1><p class="error" role="alert">${message}</p>`);
