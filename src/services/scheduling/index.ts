export { runDueTasks } from "./dueTasks";
export { logSender, sendNotifications } from "./notices";
export { CreateTask, DeleteTask, Task, UpdateTask } from "./schemas";
export { createTask, deleteTask, listTasks, updateTask } from "./tasks";
