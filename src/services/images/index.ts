export {
  deleteAllImages,
  deleteImages,
  deleteImagesOfAds,
  getImages,
  imageStatus,
  queueImages,
  rotateImages,
  shiftImage,
  switchImages,
} from "./images";
export { failImageJob, imagesTransformer, runImageJob } from "./processing";
