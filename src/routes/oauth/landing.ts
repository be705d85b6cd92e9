import { html } from "hono/html";
import { page } from "../../lib/htmlPage";

/**
 * Our landing page after the marketplace: the code and state to send with PUT /oauth/<userId>/<portal>/
 * (or the marketplace's error).  */
export function landingPage(input: { portal: string; code: string; state: string; error: string }) {
  return page(
    `${input.portal}: authorization`,
    input.error
      ? html`<h1>${input.portal} did not grant access</h1><p class="error" role="alert">${input.error}</p>`
      : html`<h1>${input.portal} granted access</h1>
          <p>Finish connecting with <code>PUT /rest/v1/oauth/&lt;userId&gt;/${input.portal}/</code> and this body:</p>
          <pre id="body">${JSON.stringify({ code: input.code, state: input.state }, null, 2)}</pre>`,
  );
}
