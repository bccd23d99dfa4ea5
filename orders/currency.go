package orders

import (
	"bufio"
	_ "embed"
	"strconv"
	"strings"
)

// iso4217 is ISO 4217 list one as "CODE MINOR_UNITS" lines; see the file's
// header for its source and what it leaves out.
//
//go:embed iso4217.txt
var iso4217 string

// minorUnits maps an upper-case ISO 4217 code to its number of minor units.
var minorUnits = parseISO4217(iso4217)

func parseISO4217(text string) map[string]int {
	m := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		code, units, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(units)
		if !ok || err != nil || len(code) != 3 {
			panic("orders: iso4217.txt: malformed line " + strconv.Quote(line))
		}
		m[code] = n
	}
	return m
}

// IsCurrency reports whether code, in any letter case, is an ISO 4217
// currency that has a minor unit. Stripe writes codes in lower case; both
// cases are accepted and orders store the lower-case form.
func IsCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	_, ok := minorUnits[strings.ToUpper(code)]
	return ok
}

// FormatAmount writes an amount in minor units the way its currency is
// written: 2500 usd is "25.00 USD", 500 jpy "500 JPY", -1999 eur
// "-19.99 EUR". A code ISO 4217 does not list is written in minor units,
// "2500 XYZ (minor units)".
func FormatAmount(amount int64, currency string) string {
	code := strings.ToUpper(currency)
	units, ok := minorUnits[code]
	if !ok {
		return strconv.FormatInt(amount, 10) + " " + code + " (minor units)"
	}
	sign, abs := "", uint64(amount)
	if amount < 0 {
		sign, abs = "-", uint64(-amount)
	}
	digits := strconv.FormatUint(abs, 10)
	if units == 0 {
		return sign + digits + " " + code
	}
	if len(digits) <= units {
		digits = strings.Repeat("0", units-len(digits)+1) + digits
	}
	cut := len(digits) - units
	return sign + digits[:cut] + "." + digits[cut:] + " " + code
}
