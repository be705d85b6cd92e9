// The order and orientation of an ad's images: swap, move and rotate them.
import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import {
  Image,
  RotateImages,
  rotateImages,
  ShiftImage,
  SwitchImages,
  shiftImage,
  switchImages,
} from "../../services/images";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";
import { tags } from "./tags";

export const imageOrderRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/imageswitch",
      entityTag: true,
      tags,
      summary: "Swap the positions of two images",
      request: {
        body: jsonBody(SwitchImages),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(ok(await switchImages(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imageshift",
      entityTag: true,
      tags,
      summary: "Move the image at the first counter to the position of the second",
      request: {
        body: jsonBody(ShiftImage),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(ok(await shiftImage(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagerotate",
      tags,
      summary: "Rotate images clockwise by 90, 180 or 270 degrees (original and thumbnail)",
      request: {
        body: jsonBody(RotateImages),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(ok(await rotateImages(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
