export { adjustWallet, getWallet } from "./wallet";
