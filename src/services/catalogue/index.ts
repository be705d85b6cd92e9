export { CATALOGUE_TTL_MS, type Catalogue, LOCALES, loadCatalogue } from "./catalogue";
export { FEATURE_NAMES } from "./features";
export { listAttributes, listCategories, listGroups } from "./queries";
export { AttributesRequest, CatalogueEntry, CategoriesQuery, Category, Group, GroupsRequest } from "./schemas";
