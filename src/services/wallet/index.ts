export { Wallet, WalletAdjustment, WalletEntry } from "./schemas";
export { adjustWallet, getWallet } from "./wallet";
