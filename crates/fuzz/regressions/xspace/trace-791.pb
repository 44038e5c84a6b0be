
//device:GPU:4"€€€€€€€€€Steps"¸¬Í€J