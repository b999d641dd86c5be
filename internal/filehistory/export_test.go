package filehistory

// SetBeforeWrite makes Restore call f between its checks and its writes,
// where another process could swap a file.
func SetBeforeWrite(j *Journal, f func()) { j.beforeWrite = f }
