package locktest

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// wineVersion asks ntdll for wine_get_version, which only wine's ntdll
// exports.
var wineVersion = sync.OnceValue(func() string {
	proc := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return "" // Windows itself
	}
	r, _, _ := proc.Call()
	if r == 0 {
		return "wine"
	}
	return "wine " + windows.BytePtrToString(*(**byte)(unsafe.Pointer(&r)))
})
