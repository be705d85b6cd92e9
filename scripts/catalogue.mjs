// Generates migrations/0005_catalogue_data.sql: the category catalogue every environment gets
// (groups, categories, attribute definitions per portal, action prices). Edit the data here and run
// `node scripts/catalogue.mjs`, then add a new migration for changes after deployment.
// It also writes simulator/catalogue.json: what each simulated marketplace publishes of its own
// categories (the attributes it takes and whether a category is automotive), the data the marketplace
// simulator reviews listings against with rules of its own.
import { writeFileSync } from "node:fs";
import attributeValues from "../src/db/attributeValues.json" with { type: "json" };

const { condition: CONDITIONS, delivery: DELIVERIES } = attributeValues;
const CAR_BRANDS = [
  "Audi",
  "BMW",
  "Citroën",
  "Fiat",
  "Ford",
  "Kia",
  "Mercedes-Benz",
  "Opel",
  "Peugeot",
  "Renault",
  "Škoda",
  "Tesla",
  "Toyota",
  "Volkswagen",
  "Volvo",
];
const FUELS = ["benzine", "diesel", "elektrisch", "hybride", "lpg"];
const CAR_OPTIONS = ["airco", "cruise control", "navigatie", "parkeersensoren", "trekhaak"];
const ELECTRONICS_BRANDS = ["Apple", "Asus", "Dell", "HP", "Lenovo", "Samsung", "Sony", "Xiaomi"];
const BIKE_BRANDS = ["Batavus", "Cortina", "Gazelle", "Giant", "Sparta", "Trek", "VanMoof"];

// [id, nl, en, automotive, kind, categories: [id, nl, en, placing price in cents (0 = free)]]
const GROUPS = [
  [
    91,
    "Auto's",
    "Cars",
    true,
    "car",
    [
      [9101, "Personenauto's", "Passenger cars", 495],
      [9102, "Bedrijfsauto's", "Commercial vehicles", 495],
      [9103, "Campers", "Campervans", 495],
      [9104, "Oldtimers", "Classic cars", 495],
      [9105, "Motoren", "Motorcycles", 295],
    ],
  ],
  [
    92,
    "Fietsen en Brommers",
    "Bicycles and mopeds",
    false,
    "bike",
    [
      [9201, "Elektrische fietsen", "Electric bicycles", 0],
      [9202, "Racefietsen", "Racing bicycles", 0],
      [9203, "Kinderfietsen", "Children's bicycles", 0],
      [9204, "Brommers", "Mopeds", 195],
      [9205, "Fietsonderdelen", "Bicycle parts", 0],
    ],
  ],
  [
    93,
    "Huis en Inrichting",
    "House and furniture",
    false,
    "general",
    [
      [9301, "Banken", "Sofas", 0],
      [9302, "Tafels", "Tables", 0],
      [9303, "Stoelen", "Chairs", 0],
      [9304, "Kasten", "Cupboards", 0],
      [9305, "Verlichting", "Lighting", 0],
    ],
  ],
  [
    94,
    "Computers en Software",
    "Computers and software",
    false,
    "electronics",
    [
      [9401, "Laptops", "Laptops", 0],
      [9402, "Desktops", "Desktops", 0],
      [9403, "Monitoren", "Monitors", 0],
      [9404, "Tablets", "Tablets", 0],
      [9405, "Software", "Software", 0],
    ],
  ],
  [
    95,
    "Telecom",
    "Telecom",
    false,
    "electronics",
    [
      [9501, "Mobiele telefoons", "Mobile phones", 0],
      [9502, "Smartwatches", "Smartwatches", 0],
      [9503, "Telefoonaccessoires", "Phone accessories", 0],
      [9504, "Vaste telefoons", "Landline phones", 0],
    ],
  ],
  [
    96,
    "Kleding | Dames",
    "Clothing | Women",
    false,
    "general",
    [
      [9601, "Jassen", "Coats", 0],
      [9602, "Jurken", "Dresses", 0],
      [9603, "Schoenen", "Shoes", 0],
      [9604, "Tassen", "Bags", 0],
    ],
  ],
  [
    97,
    "Sport en Fitness",
    "Sports and fitness",
    false,
    "general",
    [
      [9701, "Fitnessapparatuur", "Fitness equipment", 0],
      [9702, "Voetbal", "Football", 0],
      [9703, "Tennis", "Tennis", 0],
      [9704, "Kamperen", "Camping", 0],
      [9705, "Wintersport", "Winter sports", 0],
    ],
  ],
  [
    98,
    "Boeken",
    "Books",
    false,
    "general",
    [
      [9801, "Romans", "Novels", 0],
      [9802, "Studieboeken", "Study books", 0],
      [9803, "Kinderboeken", "Children's books", 0],
      [9804, "Strips", "Comics", 0],
    ],
  ],
  [
    99,
    "Tuin en Terras",
    "Garden and patio",
    false,
    "general",
    [
      [9901, "Tuinmeubelen", "Garden furniture", 0],
      [9902, "Gereedschap", "Tools", 0],
      [9903, "Barbecues", "Barbecues", 0],
      [9904, "Planten", "Plants", 0],
    ],
  ],
  [
    90,
    "Verzamelen",
    "Collectables",
    false,
    "general",
    [
      [9001, "Postzegels", "Stamps", 0],
      [9002, "Munten", "Coins", 0],
      [9003, "Ansichtkaarten", "Postcards", 0],
    ],
  ],
];

const attr = (key, labelNl, labelEn, type, options = {}) => ({
  key,
  labelNl,
  labelEn,
  type,
  values: [],
  minimum: null,
  maximum: null,
  unit: "",
  mandatory: false,
  searchable: true,
  ...options,
});

/** Attribute definitions of a category on one portal. */
function definitions(kind, portal) {
  const common = [
    attr("condition", "Conditie", "Condition", "STRING", {
      values: CONDITIONS,
      mandatory: portal !== "portal_own" && kind !== "car",
    }),
    attr("delivery", "Levering", "Delivery", "STRING", { values: DELIVERIES }),
  ];
  const byKind = {
    car: [
      attr("brand", "Merk", "Make", "STRING", { values: CAR_BRANDS, mandatory: portal === "portal_a" }),
      attr("model", "Model", "Model", "STRING", { mandatory: portal === "portal_a" }),
      attr("mileage", "Kilometerstand", "Mileage", "NUMBER", {
        minimum: 0,
        maximum: 2000000,
        unit: "km",
        mandatory: portal === "portal_a",
      }),
      attr("year", "Bouwjaar", "Year", "NUMBER", { minimum: 1900, maximum: 2027, mandatory: portal === "portal_a" }),
      attr("fuel", "Brandstof", "Fuel", "STRING", { values: FUELS, mandatory: portal === "portal_a" }),
      attr("options", "Opties", "Options", "LIST", { values: CAR_OPTIONS }),
      attr("remarks", "Opmerkingen", "Remarks", "TEXT", { searchable: false }),
    ],
    bike: [
      attr("brand", "Merk", "Brand", "STRING", { values: BIKE_BRANDS }),
      attr("frameSize", "Framemaat", "Frame size", "NUMBER", { minimum: 30, maximum: 70, unit: "cm" }),
    ],
    electronics: [
      attr("brand", "Merk", "Brand", "STRING", { values: ELECTRONICS_BRANDS }),
      attr("screenSize", "Schermdiagonaal", "Screen size", "DOUBLE", { minimum: 1, maximum: 100, unit: "inch" }),
    ],
    general: [],
  };
  // Product-safety (GPSR) data: required on portal_a for business sellers (checked by the service).
  const gpsr =
    portal === "portal_a" && kind !== "car"
      ? [
          attr("manufacturerTradename", "Fabrikant (handelsnaam)", "Manufacturer trade name", "STRING", {
            searchable: false,
          }),
          attr("manufacturerAddress", "Fabrikant (adres)", "Manufacturer address", "TEXT", { searchable: false }),
          attr("manufacturerEmail", "Fabrikant (e-mail)", "Manufacturer e-mail", "STRING", { searchable: false }),
        ]
      : [];
  return [...common, ...byKind[kind], ...gpsr];
}

const PORTAL_FEES = { portal_a: { native: 1 }, portal_b: { native: 1 } };
/** Each marketplace's share of the external price list. */
const PORTAL_SHARES = { portal_a: 1, portal_b: 0.8 };
/** [action, service fee, portal fee] in cents; placing uses the category's own price. */
const ACTIONS = [
  ["omhoogplaatsen", 50, 145],
  ["blikvanger", 100, 295],
  ["dagtopper", 150, 545],
  ["topadvertentie", 200, 795],
];

const q = (v) =>
  v === null
    ? "NULL"
    : typeof v === "number"
      ? String(v)
      : typeof v === "boolean"
        ? v
          ? "1"
          : "0"
        : `'${String(v).replaceAll("'", "''")}'`;
/** The marketplace's own catalogue: category → automotive, and per portal the attributes it takes. */
const marketplaceCatalogue = {};
const lines = [
  "-- Generated by scripts/catalogue.mjs: the category catalogue (groups, categories, attribute definitions, prices).",
];

for (const [groupId, nl, en, automotive, kind, cats] of GROUPS) {
  lines.push(
    `INSERT INTO groups (id, description_nl, description_en, automotive) VALUES (${groupId}, ${q(nl)}, ${q(en)}, ${q(automotive)});`,
  );
  for (const [categoryId, cnl, cen, placing] of cats) {
    lines.push(
      `INSERT INTO categories (id, group_id, description_nl, description_en) VALUES (${categoryId}, ${groupId}, ${q(cnl)}, ${q(cen)});`,
    );
    marketplaceCatalogue[categoryId] = {
      automotive,
      attributes: Object.fromEntries(
        ["portal_a", "portal_b"].map((portal) => [
          portal,
          definitions(kind, portal).map(({ key, type, values, minimum, maximum, mandatory }) => ({
            key,
            type,
            values,
            minimum,
            maximum,
            mandatory,
          })),
        ]),
      ),
    };
    for (const portal of ["portal_a", "portal_b", "portal_own"]) {
      definitions(kind, portal).forEach((d, i) => {
        lines.push(
          `INSERT INTO attribute_definitions (category_id, portal, key, label_nl, label_en, "values", type, sort, minimum, maximum, unit, mandatory, writable, updatable, searchable) VALUES (${categoryId}, ${q(portal)}, ${q(d.key)}, ${q(d.labelNl)}, ${q(d.labelEn)}, ${q(JSON.stringify(d.values))}, ${q(d.type)}, ${(i + 1) * 10}, ${q(d.minimum)}, ${q(d.maximum)}, ${q(d.unit)}, ${q(d.mandatory)}, 1, 1, ${q(d.searchable)});`,
        );
      });
    }
    for (const portal of ["portal_a", "portal_b"]) {
      const portalShare = PORTAL_SHARES[portal];
      const rows = [
        ["plaatsen", placing === 0 ? 0 : 100, Math.round(placing * portalShare)],
        ...ACTIONS.map(([a, fee, ext]) => [a, fee, Math.round(ext * portalShare)]),
      ];
      for (const [action, internal, external] of rows) {
        const total = action === "plaatsen" && placing === 0 ? 0 : internal + external;
        lines.push(
          `INSERT INTO category_prices (category_id, portal, action, price_internal, price_external, price_total, price_native) VALUES (${categoryId}, ${q(portal)}, ${q(action)}, ${total === 0 ? 0 : internal}, ${external}, ${total}, ${external * PORTAL_FEES[portal].native});`,
        );
      }
    }
  }
}

writeFileSync(
  new URL("../migrations/0005_catalogue_data.sql", import.meta.url),
  `${lines.join("\n--> statement-breakpoint\n")}\n`,
);
writeFileSync(new URL("../simulator/catalogue.json", import.meta.url), `${JSON.stringify(marketplaceCatalogue)}\n`);
console.log(`wrote ${lines.length - 1} statements and the simulator's catalogue`);
