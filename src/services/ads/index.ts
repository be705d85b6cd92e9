export { ADS_REVISION } from "./access";
export { checkAttributeValue } from "./attributes";
export {
  createAd,
  deleteAd,
  deleteAdsBatch,
  getAdSettings,
  patchAdsBatch,
  replaceAdSettings,
  setAdStatus,
  updateAd,
} from "./commands";
export { builtInAssistant } from "./manufacturerAssistant";
export {
  AttachManufacturer,
  CreateManufacturer,
  DeleteManufacturer,
  Manufacturer,
  ManufacturersQuery,
  UpdateManufacturer,
} from "./manufacturerSchemas";
export {
  attachManufacturer,
  createManufacturer,
  deleteManufacturer,
  searchManufacturers,
  updateManufacturer,
} from "./manufacturers";
export {
  Ad,
  AdSetting,
  AdSettingInput,
  AdsQuery,
  BatchItemResult,
  CreateAd,
  DeleteAdsBatch,
  PatchAd,
  PatchAdsBatch,
  PortalStatus,
  SimpleAd,
  UpdateAd,
} from "./schemas";
