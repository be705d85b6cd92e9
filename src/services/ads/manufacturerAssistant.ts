/**
 * The `aiassist` seam: where a stored manufacturer record is missing, an assistant suggests product-
 * safety data for a brand. The built-in assistant answers from a small directory of common brands;
 * an AI-backed one can implement the same interface.
 */
export interface ManufacturerSuggestion {
  brand: string;
  manufacturerTradename: string;
  manufacturerAddress: string;
  manufacturerEmail: string;
}

export interface ManufacturerAssistant {
  suggest(query: { brand?: string | undefined; tradename?: string | undefined }): Promise<ManufacturerSuggestion[]>;
}

const DIRECTORY: ManufacturerSuggestion[] = [
  {
    brand: "Gazelle",
    manufacturerTradename: "Koninklijke Gazelle N.V.",
    manufacturerAddress: "Wilhelminaweg 8, 6951 BP Dieren, NL",
    manufacturerEmail: "info@gazelle.nl",
  },
  {
    brand: "Batavus",
    manufacturerTradename: "Batavus B.V.",
    manufacturerAddress: "Industrieweg 4, 8444 AR Heerenveen, NL",
    manufacturerEmail: "info@batavus.com",
  },
  {
    brand: "Sparta",
    manufacturerTradename: "Sparta B.V.",
    manufacturerAddress: "Industrieweg 4, 8444 AR Heerenveen, NL",
    manufacturerEmail: "info@sparta.nl",
  },
  {
    brand: "Philips",
    manufacturerTradename: "Koninklijke Philips N.V.",
    manufacturerAddress: "Amstelplein 2, 1096 BC Amsterdam, NL",
    manufacturerEmail: "consumer.care@philips.com",
  },
  {
    brand: "Samsung",
    manufacturerTradename: "Samsung Electronics Benelux B.V.",
    manufacturerAddress: "Evert van de Beekstraat 310, 1118 CX Schiphol, NL",
    manufacturerEmail: "support@samsung.nl",
  },
  {
    brand: "Apple",
    manufacturerTradename: "Apple Distribution International Ltd.",
    manufacturerAddress: "Hollyhill Industrial Estate, Cork, IE",
    manufacturerEmail: "productsafety@apple.com",
  },
  {
    brand: "Sony",
    manufacturerTradename: "Sony Europe B.V.",
    manufacturerAddress: "Taurusavenue 16, 2132 LS Hoofddorp, NL",
    manufacturerEmail: "productsafety@sony.eu",
  },
  {
    brand: "Lego",
    manufacturerTradename: "LEGO System A/S",
    manufacturerAddress: "Aastvej 1, 7190 Billund, DK",
    manufacturerEmail: "service@lego.com",
  },
  {
    brand: "IKEA",
    manufacturerTradename: "IKEA of Sweden AB",
    manufacturerAddress: "Box 702, 343 81 Älmhult, SE",
    manufacturerEmail: "productsafety@ikea.com",
  },
  {
    brand: "Bosch",
    manufacturerTradename: "Robert Bosch GmbH",
    manufacturerAddress: "Robert-Bosch-Platz 1, 70839 Gerlingen, DE",
    manufacturerEmail: "productsafety@bosch.com",
  },
];

const normalise = (value: string) => value.trim().toLowerCase();

export const builtInAssistant: ManufacturerAssistant = {
  async suggest({ brand, tradename }) {
    return DIRECTORY.filter(
      (entry) =>
        (brand !== undefined && normalise(entry.brand) === normalise(brand)) ||
        (tradename !== undefined && normalise(entry.manufacturerTradename).includes(normalise(tradename))),
    );
  },
};
