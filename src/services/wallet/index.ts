export { Wallet, WalletAdjustment } from "./schemas";
export { adjustWallet, getWallet } from "./wallet";
