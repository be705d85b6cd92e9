import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** Our few HTML pages load nothing from anywhere and cannot be framed (a consent page is a target). */
export const PAGE_HEADERS = {
  "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
};

export const page = (title: string, body: HtmlEscapedString | Promise<HtmlEscapedString>) => html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title}</title>
    <style>
      body { font: 16px/1.5 system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; }
      label { display: block; margin: 0.75rem 0 0.25rem; }
      input[type="text"], input[type="password"] { width: 100%; padding: 0.4rem; box-sizing: border-box; }
      button { margin-top: 1rem; padding: 0.5rem 1rem; }
      .error { color: #a00; }
    </style>
  </head>
  <body>
    ${body}
  </body>
</html>`;
