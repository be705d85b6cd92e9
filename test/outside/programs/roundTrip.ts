// Each resource read and written back as read: no casts, no guards, only the client's types.
// `npm run test:client-package` type-checks it strictly against the packed client and runs it.
import { createApiClient, dataOf, listAll } from "@classified-ads/client";

const [baseUrl = "http://localhost:8787", apiKey = "dev-partner-key"] = process.argv.slice(2);
const api = createApiClient({ baseUrl, apiKey });
const written: string[] = [];

// The client itself: what GET /client/ shows, PATCH /client/ takes back.
const client = dataOf(await api.GET("/rest/v1/client"));
dataOf(await api.PATCH("/rest/v1/client", { body: client }));
written.push("client");

// A user, its settings and its ad settings.
const created = dataOf(
  await api.POST("/rest/v1/users", {
    body: {
      externalUserId: Date.now() % 1_000_000_000,
      companyName: "Meubelhandel Jansen B.V.",
      lastName: "Jansen",
      email: "verkoop@meubelhandeljansen.nl",
      phone: "0301234567",
    },
  }),
);
const userId = created.userId;
const [user] = dataOf(await api.GET("/rest/v1/users/{userId}", { params: { path: { userId } } }));
dataOf(await api.PUT("/rest/v1/users", { body: user }));
const settings = dataOf(await api.GET("/rest/v1/user/settings/{userId}", { params: { path: { userId } } }));
dataOf(await api.POST("/rest/v1/user/settings", { body: settings }));
const adSettings = dataOf(await api.GET("/rest/v1/user/adsettings/{userId}", { params: { path: { userId } } }));
dataOf(await api.POST("/rest/v1/user/adsettings", { body: adSettings }));
written.push("user", "user settings", "user ad settings");

// A contact and a folder.
const [contact] = dataOf(
  await api.POST("/rest/v1/contacts", {
    body: {
      userId,
      name: "Showroom Noord",
      address: "Industrieweg",
      houseNumber: "7",
      postalCode: "9711 AA",
      city: "Groningen",
      county: "GR",
      phone: "050-7654321",
    },
  }),
);
const [readContact] = dataOf(
  await api.GET("/rest/v1/contacts/{userId}/{contactId}", {
    params: { path: { userId, contactId: contact.contactId } },
  }),
);
dataOf(await api.PUT("/rest/v1/contacts", { body: readContact }));
const [folder] = dataOf(await api.POST("/rest/v1/folders", { body: { userId, description: "Showroom" } }));
const [readFolder] = dataOf(
  await api.GET("/rest/v1/folders/{userId}/{folderId}", { params: { path: { userId, folderId: folder.folderId } } }),
);
dataOf(await api.PUT("/rest/v1/folders", { body: readFolder }));
written.push("contact", "folder");

// An ad, found by its id, written back whole; its settings likewise. The business seller gives portal_a
// the product-safety keys discovery names for it.
const [sofas] = dataOf(
  await api.GET("/rest/v1/categories/{categoryId}", { params: { path: { categoryId: 9301 }, query: { userId } } }),
);
const keys = sofas.mandatoryAttributes.find((set) => set.portal === "portal_a")?.keys ?? [];
const ad = dataOf(
  await api.POST("/rest/v1/ads", {
    body: {
      userId,
      externalAdId: 1,
      categoryId: sofas.categoryId,
      title: "Leren bank, drie zits",
      description: "Cognac leer, zo goed als nieuw.",
      price: { model: "fixed", price: 45_000 },
      attributes: [
        {
          portal: "portal_a",
          values: keys.map((key) => ({ key, value: key === "condition" ? "gebruikt" : "Jansen B.V." })),
        },
      ],
    },
  }),
);
for await (const read of listAll(api, "/rest/v1/ads", { query: { userId, adId: [ad.adId] } })) {
  dataOf(await api.PUT("/rest/v1/ads", { body: read }));
  written.push(`ad (price model ${read.price.model}, ${read.attributes.length} attribute set)`);
}
const adSettingsRead = dataOf(await api.GET("/rest/v1/adsettings/{adId}", { params: { path: { adId: ad.adId } } }));
dataOf(await api.POST("/rest/v1/adsettings", { body: adSettingsRead }));
written.push("ad settings");

// A task and a webhook endpoint.
const [task] = dataOf(
  await api.POST("/rest/v1/tasks", { body: { userId, portal: "portal_a", time: "06:30", enabled: false } }),
);
const [readTask] = dataOf(
  await api.GET("/rest/v1/tasks/{userId}/{portal}/{taskId}", {
    params: { path: { userId, portal: task.portal, taskId: task.taskId } },
  }),
);
dataOf(await api.PUT("/rest/v1/tasks", { body: { ...readTask, userId } }));
const hook = dataOf(
  await api.POST("/rest/v1/webhooks", {
    body: { url: `http://localhost:9/hooks/${userId}`, types: ["publish.active"] },
  }),
);
const readHook = dataOf(
  await api.GET("/rest/v1/webhooks/{webhookId}", { params: { path: { webhookId: hook.webhookId } } }),
);
dataOf(
  await api.PUT("/rest/v1/webhooks/{webhookId}", { params: { path: { webhookId: hook.webhookId } }, body: readHook }),
);
written.push("task", "webhook");

console.log(JSON.stringify({ written }));
