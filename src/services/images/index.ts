export {
  deleteAllImages,
  deleteImages,
  deleteImagesOfAds,
  getImages,
  IMAGE_STATUS_PAGE,
  imageStatus,
  imageStatusPage,
  queueImages,
  rotateImages,
  shiftImage,
  switchImages,
} from "./images";
export { failImageJob, IMAGE_LIMITS, runImageJob } from "./processing";
export {
  AdImages,
  DeleteImages,
  DeleteImagesBatch,
  Image,
  ImageStatus,
  ImageStatusOfPathRequest,
  ImageStatusRequest,
  ImagesRequest,
  RotateImages,
  ShiftImage,
  SwitchImages,
} from "./schemas";
