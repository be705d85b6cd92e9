// The image operations, by what they act on: an ad's images, their order, and the image jobs.
import { flushRequestedUpdates } from "../../middleware/afterWrites";
import { createRouter } from "../openapi";
import { adImagesRouter } from "./images";
import { imageOrderRouter } from "./order";
import { imageStatusRouter } from "./status";

const router = createRouter();
// An image write may ask for updates of the ad at the marketplaces: they are queued after it succeeds.
router.use("/image*", flushRequestedUpdates);

export const imagesRouter = router
  .route("/", adImagesRouter)
  .route("/", imageOrderRouter)
  .route("/", imageStatusRouter);
