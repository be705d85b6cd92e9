export { runDueTasks } from "./dueTasks";
export { logSender, sendNotifications } from "./notices";
export { createTask, deleteTask, listTasks, updateTask } from "./tasks";
