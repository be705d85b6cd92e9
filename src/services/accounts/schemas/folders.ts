import { z } from "@hono/zod-openapi";
import { id, pagingQuery, queryBool, rowId, takingResponse, upTo } from "../../../lib/fields";

export const Folder = z
  .object({
    userId: rowId(),
    folderId: rowId(),
    description: z.string(),
    total: z.number().int().optional().openapi({ description: "Number of ads in the folder (in list answers)" }),
  })
  .openapi("Folder");

const description = upTo(255).min(1, { error: "must be 1-255 characters" });
/** A folder as answers show it is taken too (`total` ignored; a new folder gets its own id). */
export const CreateFolder = takingResponse(z.object({ userId: id(), description }), Folder).openapi("CreateFolder");
export const UpdateFolder = takingResponse(z.object({ userId: id(), folderId: id(), description }), Folder).openapi(
  "UpdateFolder",
);
export const DeleteFolder = z.object({ userId: id(), folderId: id() }).openapi("DeleteFolder");

export const FoldersQuery = pagingQuery(100).extend({
  total: queryBool()
    .optional()
    .default(false)
    .openapi({ description: "true: one complete list; false (default): paged by page and itemsPerPage" }),
});
