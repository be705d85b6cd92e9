export { ADS_REVISION } from "../shared/revisions";
export { adRevisionKey } from "./access";
export { checkAttributeValue } from "./attributes";
export { deleteAdsBatch, patchAdsBatch } from "./batches";
export { deleteAd, getAdSettings, replaceAdSettings, setAdStatus } from "./commands";
export { createAd } from "./createAd";
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
export { updateAd } from "./updateAd";
