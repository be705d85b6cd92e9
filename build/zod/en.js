// zod/v4/locales/en.js in the Worker bundle (see unavailable.js): the API words every issue it raises
// itself (src/routes/validation.ts installs them); this fallback covers the few codes it does not word
// (a record's key, a map's element), in the API's own `<field>: <problem>` form.
export default function en() {
  return { localeError: () => "is invalid" };
}
