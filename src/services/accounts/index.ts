export { getUserAdSettings, replaceUserAdSettings } from "./adSettings";
export {
  cachedClient,
  createApiClient,
  describeClient,
  findClientByKey,
  type NewClient,
  updateClient,
} from "./apiClients";
export { createContact, deleteContact, listContacts, updateContact } from "./contacts";
export { createFolder, deleteFolder, listFolders, updateFolder } from "./folders";
export {
  abandonGroupMove,
  confirmGroupMove,
  continueGroupMoves,
  groupMoveState,
  moveClientGroup,
} from "./groupMoves";
export { UserAdSetting, UserAdSettings, UserAdSettingsInput } from "./schemas/adSettings";
export { Client, ReturnOrigin, UpdateClient } from "./schemas/clients";
export { Contact, ContactsQuery, CreateContact, DeleteContact, UpdateContact } from "./schemas/contacts";
export { CreateFolder, DeleteFolder, Folder, FoldersQuery, UpdateFolder } from "./schemas/folders";
export { AbandonedMove, ConfirmedMove, GroupMove, MoveGroup } from "./schemas/groups";
export { SettingsInput, SettingsPatch, SettingsQuery, UserSettings } from "./schemas/settings";
export {
  Activate,
  ActivationToken,
  GenerateActivation,
  GenerateLoginLink,
  LoginLink,
  ValidatedLogin,
  ValidateLoginLink,
} from "./schemas/tokens";
export { CreatedUser, CreateUser, DeleteUser, UpdateUser, User, UserIdParam, UsersQuery } from "./schemas/users";
export { getSettings, patchSettings, replaceSettings } from "./settings";
export {
  ACTIVATION_GENERATION_LIMIT,
  activate,
  generateActivation,
  generateLoginLink,
  issueActivation,
  LOGIN_LINK_TTL_MS,
  validateLoginLink,
} from "./tokens";
export { createUser, deleteUser, getUser, listUsers, updateUser } from "./users";
