export { CATALOGUE_TTL_MS, type Catalogue, LOCALES, loadCatalogue } from "./catalogue";
export { FEATURE_NAMES } from "./features";
export { listAttributes, listGroups } from "./queries";
export { AttributesRequest, CatalogueEntry, Group, GroupsRequest } from "./schemas";
