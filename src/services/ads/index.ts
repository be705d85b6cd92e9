export { ADS_REVISION } from "../shared/revisions";
export { adRevisionKey } from "./access";
export { checkAttributeValue } from "./attributes";
export { deleteAdsBatch, patchAdsBatch } from "./batches";
export { createAd, deleteAd, getAdSettings, replaceAdSettings, setAdStatus, updateAd } from "./commands";
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
  AdSetting,
  AdSettings,
  AdSettingsInput,
  BatchItemResult,
  DeleteAdsBatch,
  PatchAd,
  PatchAdsBatch,
} from "./schemas";
