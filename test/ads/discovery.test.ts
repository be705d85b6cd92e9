import { beforeAll, describe, expect, it } from "vitest";
import { MARKETPLACES } from "../../src/lib/vocabulary";
import { call, expectEnvelope, groupOf, newClient } from "../harness/api";
import { createAd, createUser, PAID_CATEGORY } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

/**
 * Discovery knows the seller: for each kind of seller and every category, the keys GET /categories/ and
 * POST /attributes/ name for a user are exactly those a create refuses as missing for that user.
 */

let key: string;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
});

const SELLERS = {
  private: { companyName: null },
  business: { companyName: "Meubelhandel Jansen B.V." },
} as const;

interface CategoryView {
  categoryId: number;
  mandatoryAttributes: { portal: string; keys: string[] }[];
}

describe("mandatory attributes per seller", () => {
  it.each(Object.entries(SELLERS))(
    "a %s seller: every category's discovered keys are what a create refuses without them",
    async (_, seller) => {
      const user = await createUser(key, seller);
      const categories = await call("GET", `/categories/?userId=${user.userId}&itemsPerPage=500`, { key });
      expectEnvelope(categories, 200);
      const views = categories.body.data as CategoryView[];
      expect(views.length).toBeGreaterThan(40);
      const attributes = await call("POST", "/attributes/", {
        key,
        body: { userId: user.userId, itemsPerPage: 500 },
      });
      expectEnvelope(attributes, 200);
      let productSafetyAsked = 0;
      for (const view of views) {
        for (const portal of MARKETPLACES) {
          const discovered = view.mandatoryAttributes.find((set) => set.portal === portal)?.keys ?? [];
          if (discovered.includes("manufacturerTradename")) productSafetyAsked += 1;
          const create = await call("POST", "/ads/", {
            key,
            body: {
              userId: user.userId,
              externalAdId: view.categoryId * 10 + MARKETPLACES.indexOf(portal),
              categoryId: view.categoryId,
              title: "Discovery check",
              description: "What the catalogue says is needed",
              price: { model: "fixed", price: 1000 },
              attributes: [{ portal, values: [] }],
            },
          });
          const refused = (create.body.errorDetails ?? []).map((problem) => problem.field);
          expect(new Set(refused), `category ${view.categoryId} on ${portal}`).toEqual(
            new Set(discovered.map((k) => `attributes.${portal}.${k}`)),
          );
        }
      }
      // Business sellers are asked for product safety on portal_a outside the automotive group; private ones never.
      if (seller.companyName) expect(productSafetyAsked).toBeGreaterThan(20);
      else expect(productSafetyAsked).toBe(0);
      // POST /attributes/ for the same seller marks the same keys mandatory (portal_own and connected portals).
      const entries = attributes.body.data as {
        categoryId: number;
        attributes: { portal: string; attributes: { key: string; mandatory: boolean }[] }[];
      }[];
      for (const entry of entries)
        for (const set of entry.attributes) {
          const view = views.find((v) => v.categoryId === entry.categoryId);
          const keys = view?.mandatoryAttributes.find((m) => m.portal === set.portal)?.keys ?? [];
          expect(set.attributes.filter((a) => a.mandatory).map((a) => a.key)).toEqual(keys);
        }
    },
    120_000,
  );
});

describe("what a placement costs, per category and target", () => {
  it("GET /categories/ names each target's placement price, and a dry run charges exactly that", async () => {
    const partner = await newClient({ partner: true });
    const internal = await newClient({ internal: true, groupId: await groupOf(partner.client.id) });
    const sellerId = await connectedSeller(partner.key, internal.key, 100_000);
    const answer = await call("GET", `/categories/${PAID_CATEGORY}`, { key: partner.key });
    expectEnvelope(answer, 200);
    const view = answer.body.data[0] as { portals: string[]; placementPrices: { portal: string; price: number }[] };
    expect(view.placementPrices.map((p) => p.portal)).toEqual(view.portals);
    expect(view.placementPrices.find((p) => p.portal === "website")?.price).toBe(0);
    const { adId } = await createAd(partner.key, sellerId, { categoryId: PAID_CATEGORY });
    for (const portal of ["portal_a", "website"]) {
      const dry = await call("POST", "/publish/preflight/", {
        key: partner.key,
        body: { userId: sellerId, adId, portal },
      });
      expectEnvelope(dry, 200);
      const charged = dry.body.data.verdicts[0]?.price;
      expect(charged, portal).toBe(view.placementPrices.find((p) => p.portal === portal)?.price);
    }
    expect(view.placementPrices.find((p) => p.portal === "portal_a")?.price).toBeGreaterThan(0);
  });
});
