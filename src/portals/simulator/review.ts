import { PRICE_MODELS } from "../../db/schema";
import { checkAttributeValue } from "../../services/ads";
import type { Catalogue } from "../../services/catalogue";
import type { MarketplacePortal } from "../config";
import type { Listing } from "../listing";

const TITLE = { min: 5, max: 60 };
const DESCRIPTION = { min: 5, max: 65_536 };
const MAX_IMAGES = 24;
const IMAGETEXT_MAX = 18;
const WEB_URL = /^https?:\/\/[^\s/]+(\/\S*)?$/i;

const plainLength = (html: string) => html.replace(/<[^>]*>/g, "").trim().length;

/**
 * What a strict marketplace checks before it takes a listing, as the catalogue defines the portal:
 * the first problem as `<field>: <problem>`, or null. Rules of the simulated marketplace beyond the
 * catalogue: model `bidding` is not offered in automotive categories, a minimum bid is at most the
 * asking price, image, video and website links are absolute http(s) URLs.
 */
export function reviewListing(catalogue: Catalogue, portal: MarketplacePortal, listing: Listing): string | null {
  const category = catalogue.categories.get(listing.categoryId);
  if (!category) return `categoryId: ${listing.categoryId} is not a category of ${portal}`;
  const titleLength = listing.title.trim().length;
  if (titleLength < TITLE.min || titleLength > TITLE.max) return `title: must be ${TITLE.min}-${TITLE.max} characters`;
  const descriptionLength = plainLength(listing.description);
  if (descriptionLength < DESCRIPTION.min) return `description: must be at least ${DESCRIPTION.min} characters`;
  if (listing.description.length > DESCRIPTION.max) return `description: must be at most ${DESCRIPTION.max} characters`;

  const definitions = catalogue.definitions.get(category.id)?.get(portal) ?? [];
  const given = new Map<string, number>();
  for (const { key, value } of listing.attributes) {
    const definition = definitions.find((d) => d.key === key);
    if (!definition) return `attributes.${key}: not an attribute of category ${category.id}`;
    given.set(key, (given.get(key) ?? 0) + 1);
    if ((given.get(key) ?? 0) > 1 && definition.type !== "LIST") return `attributes.${key}: takes one value`;
    const problem = checkAttributeValue(definition, value);
    if (problem) return `attributes.${key}: ${problem}`;
  }
  const missing = definitions.find((d) => d.mandatory && !given.has(d.key));
  if (missing) return `attributes.${missing.key}: is required`;

  const { price } = listing;
  if (!(PRICE_MODELS as readonly string[]).includes(price.model)) return `price.model: ${price.model} is not offered`;
  if (price.model === "bidding" && catalogue.groups.get(category.groupId)?.automotive) {
    return `price.model: bidding is not offered in category ${category.id}`;
  }
  if ((price.model === "fixed" || price.model === "bidding") && !price.price) {
    return `price.price: is required for model ${price.model}`;
  }
  if (price.model === "bidding") {
    if (price.minimumBid === null) return "price.minimumBid: is required for model bidding";
    if (price.price !== null && price.minimumBid > price.price) return "price.minimumBid: must not exceed the price";
  }

  if (listing.images.length > MAX_IMAGES) return `images: at most ${MAX_IMAGES}`;
  const badImage = listing.images.findIndex((url) => !WEB_URL.test(url));
  if (badImage >= 0) return `images.${badImage}: must be an absolute http(s) URL`;
  if (listing.imagetext !== null && listing.imagetext.length > IMAGETEXT_MAX) {
    return `imagetext: must be at most ${IMAGETEXT_MAX} characters`;
  }
  if (listing.url !== null && !WEB_URL.test(listing.url)) return "url: must be an absolute http(s) URL";
  if (listing.video !== null && !(WEB_URL.test(listing.video) && /\.mp4(\?|$)/i.test(listing.video))) {
    return "video: must be an absolute http(s) URL of an mp4 file";
  }
  return null;
}
