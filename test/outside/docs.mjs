// npm run test:browser: the API reference in a real browser. Starts `npm run dev` on a spare port,
// opens /docs in headless Chromium (Debian's package, driven by puppeteer-core), and checks that it
// renders every tag group, that "Test Request" against GET /rest/v1/client with the development key
// answers 200, and that no request leaves localhost (before it: a stock upload with a bad key is answered
// while it still sends); then connects a user to portal_a the way a seller
// does: the marketplace's consent page, signing in as `demo`, and our landing page with the code and
// state, and once more with a returnUrl, which brings the browser back to the client connected.
// Screenshots go to test/screenshots/ (git-ignored).
import { mkdir, readFile } from "node:fs/promises";
import http from "node:http";
import puppeteer from "puppeteer-core";
import { startDev } from "./devServer.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const DEV_KEY = "dev-internal-key";
const SHOTS = "test/screenshots";
const DEV_LOG = `${SHOTS}/wrangler-dev.log`;

await mkdir(SHOTS, { recursive: true });
const { origin, document, stop } = await startDev(DEV_LOG);

/**
 * The status a stock upload with a bad key is answered with while its body is still being sent (a line a
 * second, never ended): "never" when no answer came before the body was given up after 30 s.
 */
function refusedWhileUploading(url) {
  return new Promise((resolve) => {
    const request = http.request(url, {
      method: "POST",
      headers: { Authorization: "Bearer not-a-key", "Content-Type": "application/x-ndjson" },
    });
    const line = () => request.write('{"externalAdId":1}\n');
    const sending = setInterval(line, 1000);
    const giveUp = setTimeout(() => finish("never"), 30_000);
    const finish = (status) => {
      clearInterval(sending);
      clearTimeout(giveUp);
      request.destroy();
      resolve(status);
    };
    request.on("response", (response) => finish(response.statusCode));
    request.on("error", () => finish("never"));
    line();
  });
}

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

let browser;
try {
  // The first start in a terminal: no question, a short banner, no update notice; the README's commands work.
  const started = await readFile(DEV_LOG, "utf8");
  check(started.includes("Classified Advertisement Management API (development)"), "npm run dev prints its banner");
  check(!/About to apply|\(Y\/n\)/.test(started), "npm run dev asks nothing");
  check(!/update available/i.test(started), "npm run dev shows no update notice");
  const client = await fetch(`${origin}/rest/v1/client/`, { headers: { Authorization: `Bearer ${DEV_KEY}` } });
  check(client.status === 200, `the README's GET /rest/v1/client/ answers 200 (${client.status})`);
  const cron = await fetch(`${origin}/__scheduled?cron=*+*+*+*+*`);
  check(cron.status === 200, `the README's cron command answers 200 (${cron.status})`);
  const refused = await refusedWhileUploading(`${origin}/rest/v1/syncs/?userId=1`);
  check(refused === 401, `a stock upload with a bad key is answered 401 while it still sends (${refused})`);

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  const outside = [];
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const url = new URL(request.url());
    const local = ["localhost", "127.0.0.1"].includes(url.hostname) || ["data:", "blob:"].includes(url.protocol);
    if (local) return request.continue();
    outside.push(request.url());
    return request.abort();
  });
  const consoleErrors = [];
  page.on("console", (message) => message.type() === "error" && consoleErrors.push(message.text()));

  const answer = await page.goto(`${origin}/docs`, { waitUntil: "networkidle0" });
  check(answer?.status() === 200, `/docs answers 200 (${answer?.status()})`);
  // frame-ancestors works only as a header (a <meta> CSP ignores it): public/_headers sends it.
  const csp = answer?.headers()["content-security-policy"] ?? "";
  check(csp.includes("frame-ancestors 'none'"), `/docs cannot be framed (Content-Security-Policy: ${csp})`);
  const tags = document.tags.map((tag) => tag.name);
  // innerText throughout: the checks are about the text a reader sees, as rendered (biome.json).
  await page
    .waitForFunction(
      (names) => names.every((name) => document.body.innerText.includes(name)),
      { timeout: 30_000 },
      tags,
    )
    .catch(() => undefined);
  const text = await page.evaluate(() => document.body.innerText);
  const missing = tags.filter((tag) => !text.includes(tag));
  check(
    missing.length === 0,
    `renders every tag group (${tags.length})${missing.length ? `; missing ${missing.join(", ")}` : ""}`,
  );
  for (const hidden of ["Ask AI", "Generate MCP", "Deploy"]) check(!text.includes(hidden), `shows no "${hidden}"`);
  // The introduction teaches: every guide of public/docs/guide.md renders, the error table with it.
  const guides = [
    "Authentication",
    "The envelope and errors",
    "Pagination",
    "Rate limits",
    "Idempotency-Key",
    "Publishing",
    "Jobs",
    "The event feed",
    "Webhooks",
    "Reading your own writes",
  ];
  const unrendered = guides.filter((guide) => !text.includes(guide));
  check(unrendered.length === 0, `renders the guides${unrendered.length ? `; missing ${unrendered.join(", ")}` : ""}`);
  check(
    text.includes("unknown_field") && text.includes("webhook.verify"),
    "shows the error codes and the webhook check",
  );
  await page.screenshot({ path: `${SHOTS}/docs.png` });

  check(await tryClient(page), `"Test Request" of GET /rest/v1/client with ${DEV_KEY} shows 200`);
  await connectThroughConsent(page);
  await connectAndReturn(page);

  check(
    outside.length === 0,
    `no request leaves localhost${outside.length ? `: ${[...new Set(outside)].join(", ")}` : ""}`,
  );
  if (consoleErrors.length) console.log(`console errors:\n  ${consoleErrors.join("\n  ")}`);
} catch (error) {
  failures.push(String(error));
  console.error(error);
} finally {
  await browser?.close();
  await stop();
}
if (failures.length) {
  console.error(`\n${failures.length} browser check(s) failed; screenshots and the dev log are in ${SHOTS}/`);
  process.exit(1);
}
console.log(`\nthe reference works in Chromium; screenshots in ${SHOTS}/`);
process.exit(0);

/** Opens GET /rest/v1/client in the reference's client, enters the key, sends it, and reads the status. */
async function tryClient(page) {
  const token = await page.waitForSelector("input[placeholder='Token']", { timeout: 10_000 });
  await token.type(DEV_KEY);
  await clickText(page, "button", "Open Group - Client");
  // The reference renders an operation once it scrolls into view: its sidebar link takes it there.
  await page.evaluate(() => document.querySelector("a[href='#tag/client/GET/rest/v1/client']")?.click());
  await clickText(page, "button", "(get /rest/v1/client)");
  const sent = page.waitForResponse((response) => new URL(response.url()).pathname === "/rest/v1/client", {
    timeout: 15_000,
  });
  await clickText(page, "button", "Send get request to");
  const response = await sent;
  const authorised = response.request().headers().authorization === `Bearer ${DEV_KEY}`;
  // The client's response panel shows the status the API answered.
  const shown = await page
    .waitForFunction(() => document.body.innerText.includes("200 OK"), { timeout: 10_000 })
    .then(() => true)
    .catch(() => false);
  await page.screenshot({ path: `${SHOTS}/docs-try-client.png` });
  console.log(`     answered ${response.status()}, key sent: ${authorised}, status shown: ${shown}`);
  return response.status() === 200 && authorised && shown;
}

/** The API as a script calls it, with the development key. */
async function api(method, path, body) {
  const response = await fetch(`${origin}/rest/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${DEV_KEY}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}

/** A new user connects portal_a in the browser: consent page, sign-in as demo, landing page, PUT. */
async function connectThroughConsent(page) {
  const user = await api("POST", "/users/", {
    externalUserId: Date.now() % 1_000_000_000,
    lastName: "Browser",
    email: "browser@example.nl",
    phone: "0201234567",
  });
  const { userId, activation } = user.data;
  await api("POST", "/user/activate/", { userId, activationtoken: activation.activationtoken });
  const { redirect } = (await api("POST", `/oauth/${userId}/portal_a/`)).data;
  const consent = await page.goto(redirect, { waitUntil: "load" });
  const fields = await page.evaluate(() => [...document.querySelectorAll("form input")].map((input) => input.name));
  check(
    consent?.status() === 200 && fields.includes("username") && fields.includes("password"),
    `the consent page shows a sign-in form (${consent?.status()}: ${fields.filter((f) => !f.includes("_")).join(", ")})`,
  );
  await page.screenshot({ path: `${SHOTS}/oauth-consent.png` });
  await page.type("#username", "demo");
  await page.type("#password", "demo");
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
  const landing = new URL(page.url());
  const text = await page.evaluate(() => document.body.innerText);
  const code = landing.searchParams.get("code");
  check(
    landing.pathname === "/oauth/callback/portal_a" && Boolean(code) && text.includes(code ?? "?"),
    `signing in lands on /oauth/callback/portal_a, which shows the code and state`,
  );
  await page.screenshot({ path: `${SHOTS}/oauth-landing.png` });
  const done = await api("PUT", `/oauth/${userId}/portal_a/`, { code, state: landing.searchParams.get("state") });
  check(done.data?.status === true, `PUT /oauth/<userId>/portal_a/ with them connects the user (${done.data?.status})`);
}

/**
 * The consent hand-off: the client registers its origin (here the dev server's own), starts consent with
 * a returnUrl there, and the user, signing up at the marketplace in the browser, lands back on it
 * connected; the API exchanged the code itself.
 */
async function connectAndReturn(page) {
  const registered = await api("PATCH", "/client/", { returnOrigins: [origin] });
  check(registered.data?.returnOrigins?.includes(origin), `PATCH /client/ registers ${origin} as a return origin`);
  const user = await api("POST", "/users/", {
    externalUserId: (Date.now() + 1) % 1_000_000_000,
    lastName: "Terug",
    email: "terug@example.nl",
    phone: "0201234567",
  });
  const { userId, activation } = user.data;
  await api("POST", "/user/activate/", { userId, activationtoken: activation.activationtoken });
  const returnUrl = `${origin}/docs?from=consent`;
  const { redirect } = (await api("POST", `/oauth/${userId}/portal_a/`, { returnUrl })).data;
  await page.goto(redirect, { waitUntil: "load" });
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("#signup")]);
  await page.type("#username", `browser-${Date.now()}`);
  await page.type("#password", "browser-password");
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
  const back = new URL(page.url());
  check(
    back.origin === origin &&
      back.pathname === "/docs" &&
      back.searchParams.get("status") === "connected" &&
      back.searchParams.get("userId") === String(userId),
    `after consent the browser lands on the returnUrl, connected (${back.pathname}${back.search})`,
  );
  const connection = await api("GET", `/oauth/${userId}/portal_a/`);
  check(connection.data?.status === true, "the user is connected, the code exchanged inside the API");
  const refused = await api("POST", `/oauth/${userId}/portal_a/`, { returnUrl: "https://evil.example/" });
  check(refused.errorDetails?.[0]?.code === "validation_failed", "a returnUrl on another origin is refused");
}

/** Clicks the first visible element of `selector` whose text contains `text`, waiting for it to appear. */
async function clickText(page, selector, text) {
  await page.waitForFunction(
    (sel, wanted) => [...document.querySelectorAll(sel)].some((e) => e.innerText.includes(wanted)),
    { timeout: 15_000 },
    selector,
    text,
  );
  await page.evaluate(
    (sel, wanted) => [...document.querySelectorAll(sel)].find((e) => e.innerText.includes(wanted))?.click(),
    selector,
    text,
  );
}
