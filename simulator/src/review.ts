import catalogueData from "../catalogue.json";
import type { Portal } from "./env";
import type { MarketplaceListing } from "./listing";

/** One attribute as the marketplace's catalogue publishes it. */
interface PublishedAttribute {
  key: string;
  type: "STRING" | "TEXT" | "NUMBER" | "DOUBLE" | "LIST";
  values: string[];
  minimum: number | null;
  maximum: number | null;
  mandatory: boolean;
}

interface PublishedCategory {
  automotive: boolean;
  attributes: Record<Portal, PublishedAttribute[]>;
}

/** The marketplace's own catalogue (simulator/catalogue.json, written by scripts/catalogue.mjs). */
const CATALOGUE = catalogueData as unknown as Record<string, PublishedCategory>;

const PRICE_MODELS = new Set(["fixed", "bidding", "see description", "reserved"]);
const TITLE = { min: 5, max: 60 };
const DESCRIPTION = { min: 5, max: 65_536 };
const MAX_IMAGES = 24;
const IMAGETEXT_MAX = 18;
/** Longest value of a one-line attribute, and of a TEXT one. */
const VALUE_MAX = { line: 255, text: 4096 };
const WEB_URL = /^https?:\/\/[^\s/]+(\/\S*)?$/i;

const plainLength = (html: string) => html.replace(/<[^>]*>/g, "").trim().length;

/** What is wrong with one value of an attribute, by the catalogue's published type, range and values. */
function attributeProblem(attribute: PublishedAttribute, value: string | number): string | null {
  const written = typeof value === "number" ? String(value) : value.trim();
  if (written === "") return "is empty";
  if (attribute.values.length > 0 && !attribute.values.includes(written)) return "is not one of the offered values";
  if (attribute.type === "NUMBER" || attribute.type === "DOUBLE") {
    const number = Number(written);
    if (!Number.isFinite(number)) return "is not a number";
    if (attribute.type === "NUMBER" && !Number.isInteger(number)) return "is not a whole number";
    if (
      (attribute.minimum !== null && number < attribute.minimum) ||
      (attribute.maximum !== null && number > attribute.maximum)
    )
      return `is outside ${attribute.minimum ?? "-∞"}..${attribute.maximum ?? "∞"}`;
    return null;
  }
  const max = attribute.type === "TEXT" ? VALUE_MAX.text : VALUE_MAX.line;
  return written.length > max ? `is longer than ${max} characters` : null;
}

/** The first problem of the attributes against the category's published ones, or null. */
function attributesProblem(published: PublishedAttribute[], given: MarketplaceListing["attributes"]): string | null {
  const counts = new Map<string, number>();
  for (const { key, value } of given) {
    const attribute = published.find((a) => a.key === key);
    if (!attribute) return `attributes.${key}: not taken in this category`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (attribute.type !== "LIST" && (counts.get(key) ?? 0) > 1) return `attributes.${key}: takes one value`;
    const problem = attributeProblem(attribute, value);
    if (problem) return `attributes.${key}: ${problem}`;
  }
  const missing = published.find((a) => a.mandatory && !counts.has(a.key));
  return missing ? `attributes.${missing.key}: is required` : null;
}

function priceProblem(listing: MarketplaceListing, automotive: boolean): string | null {
  const { price } = listing;
  if (!PRICE_MODELS.has(price.model)) return `price.model: ${price.model} is not offered`;
  if (price.model === "bidding" && automotive) {
    return `price.model: bidding is not offered in category ${listing.categoryId}`;
  }
  if ((price.model === "fixed" || price.model === "bidding") && !price.price) {
    return `price.price: is required for model ${price.model}`;
  }
  if (price.model === "bidding") {
    if (price.minimumBid === null) return "price.minimumBid: is required for model bidding";
    if (price.price !== null && price.minimumBid > price.price) return "price.minimumBid: must not exceed the price";
  }
  return null;
}

function mediaProblem(listing: MarketplaceListing): string | null {
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

/**
 * What this marketplace checks before it takes a listing, by its own published catalogue: the first
 * problem as `<field>: <problem>`, or null. Its rules beyond the catalogue: no bidding on vehicles, a
 * minimum bid at most the asking price, image, video and website links absolute http(s) URLs.
 */
export function reviewListing(portal: Portal, listing: MarketplaceListing): string | null {
  const category = CATALOGUE[String(listing.categoryId)];
  if (!category) return `categoryId: ${listing.categoryId} is not a category of ${portal}`;
  const titleLength = listing.title.trim().length;
  if (titleLength < TITLE.min || titleLength > TITLE.max) return `title: must be ${TITLE.min}-${TITLE.max} characters`;
  if (plainLength(listing.description) < DESCRIPTION.min) {
    return `description: must be at least ${DESCRIPTION.min} characters`;
  }
  if (listing.description.length > DESCRIPTION.max) return `description: must be at most ${DESCRIPTION.max} characters`;
  return (
    attributesProblem(category.attributes[portal], listing.attributes) ??
    priceProblem(listing, category.automotive) ??
    mediaProblem(listing)
  );
}
