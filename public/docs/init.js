// The API reference at /docs: the document of this deployment, nothing from any other origin, the
// vendor's AI, MCP and deploy features off, and the API key (bearer) the one authentication offered.
// Its introduction is the guide (guide.md, a static file beside this one): authentication, errors and
// their codes, paging, limits, idempotency, publishing, jobs, events, webhooks, reading your own writes.
const [document, guide] = await Promise.all([
  fetch("/rest/v1/openapi.json").then((response) => response.json()),
  fetch("/docs/guide.md").then((response) => response.text()),
]);
document.info.description = guide;
Scalar.createApiReference("#reference", {
  content: document,
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showToolbar: "never",
  showDeveloperTools: "never",
  documentDownloadType: "json",
  hideDarkModeToggle: false,
  authentication: { preferredSecurityScheme: "bearerAuth" },
});
