// The API reference at /docs: the document of this deployment, nothing from any other origin, the
// vendor's AI, MCP and deploy features off, and the API key (bearer) the one authentication offered.
Scalar.createApiReference("#reference", {
  url: "/rest/v1/openapi.json",
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
