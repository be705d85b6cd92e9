export { CATALOGUE_TTL_MS, LOCALES, loadCatalogue } from "./catalogue";
export { FEATURE_NAMES } from "./features";
export { listAttributes, listGroups } from "./queries";
