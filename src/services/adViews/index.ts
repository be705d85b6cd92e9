// The read model of ads: their views and searches, assembled from every domain that contributes to an
// ad (images, publications, features, contacts). No domain imports it; routes call it after a write.

export { adsAfterBoundary, adsSampleOf, deepPageBoundary, mergeDeepPage, sampledDeepPage } from "./deepPages";
export { adsPartOf, adViewsOf, mergeAdsParts } from "./mergedPages";
export { Ad, AdsQuery, CreateAd, SimpleAd, UpdateAd } from "./schemas";
export { searchAds } from "./search";
export { getAd } from "./views";
