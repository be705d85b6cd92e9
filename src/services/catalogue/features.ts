import type { Marketplace } from "../../lib/vocabulary";
import type { Catalogue } from "./catalogue";

/** The paid features a marketplace sells, and the catalogue action that prices each. */
export const FEATURES = {
  omhoogplaatsen: { displayName: "Omhoogplaatsen", action: "omhoogplaatsen", times: 1 },
  dagtopper: { displayName: "Dagtopper (1 dag)", action: "dagtopper", times: 1 },
  dagtopper3: { displayName: "Dagtopper (3 dagen)", action: "dagtopper", times: 3 },
  dagtopper7: { displayName: "Dagtopper (7 dagen)", action: "dagtopper", times: 7 },
  homepaginaAdvertentie: { displayName: "Homepagina-advertentie", action: "topadvertentie", times: 1 },
  url: { displayName: "Link naar website", action: "blikvanger", times: 1 },
} as const;

export type FeatureName = keyof typeof FEATURES;
export const FEATURE_NAMES = Object.keys(FEATURES) as [FeatureName, ...FeatureName[]];
export const isFeatureName = (name: string | null): name is FeatureName =>
  name !== null && Object.hasOwn(FEATURES, name);

/** Service price, portal price and what the wallet is charged, in cents. */
export function featurePrice(
  catalogue: Catalogue,
  categoryId: number | null,
  portal: Marketplace,
  feature: FeatureName,
) {
  const { action, times } = FEATURES[feature];
  const row = catalogue.prices.get(categoryId ?? 0)?.find((p) => p.portal === portal && p.action === action);
  if (!row) return null;
  return {
    price: row.priceInternal * times,
    priceAdditional: row.priceExternal * times,
    total: row.priceTotal * times,
  };
}

/** What placing an ad on a portal costs (the `plaatsen` action); the website is free. */
export function placingPrice(catalogue: Catalogue, categoryId: number | null, portal: string): number {
  if (portal === "website") return 0;
  return (
    catalogue.prices.get(categoryId ?? 0)?.find((p) => p.portal === portal && p.action === "plaatsen")?.priceTotal ?? 0
  );
}
