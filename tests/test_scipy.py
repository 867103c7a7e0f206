"""minijax.scipy.special and minijax.scipy.stats against scipy: values (recorded from scipy
1.x as literals, so the tests need no scipy), in float32 and with x64 in float64, gradients
against finite differences, the custom derivatives at the points where the plain formula
fails, vmap, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.scipy import special, stats
from tests.transform_checks import (VmapCheck, gradient_checks_in_x64, run_together,
                                    verify_gradient_check)

pytestmark = pytest.mark.usefixtures("x64_off")


X = np.array([-3., -1., -0.5, 0., 0.3, 1., 2.5, 7.])
P = np.array([0., 1e-30, 1e-6, 0.01, 0.2, 0.5, 0.7, 0.99, 0.999999, 1.])
POS = np.array([1e-3, 0.1, 0.5, 1., 2.5, 10., 40.])
K = np.array([-1., 0., 1., 2.5, 3., 10.])

# (expression, scipy's float64 values)
FACTS = [
    ('special.gammaln(POS)',
     [6.907178885383853, 2.252712651734206, 0.5723649429247, 0.0, 0.2846828704729192, 12.801827480081469, 106.63176026064345]),
    ('special.gammaln(X)',
     [np.inf, np.inf, 1.2655121234846454, np.inf, 1.0957979948180756, 0.0, 0.2846828704729192, 6.579251212010101]),
    ('special.digamma(POS)',
     [-1000.5755719318103, -10.423754940411076, -1.9635100260214235, -0.5772156649015329, 0.7031566406452432, 2.251752589066721, 3.6763273740348428]),
    ('special.gamma(np.array([0.5, 3., -0.5, -1.5, 4.2, -1.]))',
     [1.7724538509055159, 2.0, -3.5449077018110318, 2.363271801207355, 7.75668953579318, np.nan]),
    ('special.erf(X)',
     [-0.9999779095030014, -0.8427007929497148, -0.5204998778130465, 0.0, 0.3286267594591274, 0.8427007929497148, 0.999593047982555, 1.0]),
    ('special.erfc(X)',
     [1.9999779095030015, 1.8427007929497148, 1.5204998778130465, 1.0, 0.6713732405408726, 0.15729920705028516, 0.00040695201744495886, 4.183825607779414e-23]),
    ('special.erfinv(np.array([-1., -0.99, -0.5, 0., 0.3, 0.999, 1.]))',
     [-np.inf, -1.8213863677184496, -0.4769362762044699, 0.0, 0.2724627147267544, 2.326753765513524, np.inf]),
    ('special.expit(X)',
     [0.04742587317756678, 0.2689414213699951, 0.3775406687981454, 0.5, 0.574442516811659, 0.7310585786300049, 0.9241418199787566, 0.9990889488055994]),
    ('special.logit(P)',
     [-np.inf, -69.07755278982137, -13.815509557963773, -4.59511985013459, -1.3862943611198906, 0.0, 0.8472978603872034, 4.595119850134589, 13.815509557935018, np.inf]),
    ('special.xlogy(np.array([0., 0., 1., 2., -1.]), np.array([0., 2., 0., 3., 0.5]))',
     [0.0, 0.0, -np.inf, 2.1972245773362196, 0.6931471805599453]),
    ('special.xlog1py(np.array([0., 0., 1., 2.]), np.array([-1., 2., -1., 3.]))',
     [0.0, 0.0, -np.inf, 2.772588722239781]),
    ('special.entr(np.array([-1., 0., 0.3, 1., 4.]))',
     [-np.inf, 0.0, 0.3611918412977808, -0.0, -5.545177444479562]),
    ('special.rel_entr(np.array([0., 0.5, 1., 0.2]), np.array([0.3, 0.5, 0.2, 0.]))',
     [0.0, 0.0, 1.6094379124341003, np.inf]),
    ('special.kl_div(np.array([0., 0.5, 1., 0.2]), np.array([0.3, 0.5, 0.2, 0.]))',
     [0.3, 0.0, 0.8094379124341002, np.inf]),
    ('special.multigammaln(np.array([2., 3.5, 10.]), 3)',
     [1.5963125911388552, 3.895898482154039, 36.81285863239809]),
    ('special.betaln(np.array([0.5, 1., 2., 10., 100., 1e5]), np.array([0.5, 3., 20., 10., 1e3, 2e5]))',
     [1.1447298858494, -1.0986122886681098, -6.040254711277414, -13.736229227036555, -336.43485764773686, -190958.8852791167]),
    ('special.beta(np.array([0.5, 2., 3.]), np.array([1.5, 3., 0.5]))',
     [1.5707963267948963, 0.08333333333333333, 1.0666666666666667]),
    ('special.ndtr(X)',
     [0.0013498980316300933, 0.15865525393145707, 0.3085375387259869, 0.5, 0.6179114221889526, 0.8413447460685429, 0.9937903346742238, 0.9999999999987201]),
    ('special.ndtri(P)',
     [-np.inf, -11.464024688443613, -4.753424308822899, -2.3263478740408408, -0.8416212335729142, 0.0, 0.5244005127080407, 2.3263478740408408, 4.753424308817087, np.inf]),
    ('special.log_ndtr(np.array([-50., -20., -11., -5., 0., 3., 6., 10.]))',
     [-1254.8313611394199, -203.9171553710973, -63.824934094423725, -15.064998393988727, -0.6931471805599453, -0.0013508099647481925, -9.86587645524372e-10, -7.61985302416047e-24]),
    ('special.gammainc(np.array([0.5, 1., 2., 5.]), np.array([0.1, 2., 2., 3.]))',
     [0.34527915398142317, 0.8646647167633873, 0.5939941502901616, 0.18473675547622787]),
    ('special.gammaincc(np.array([0.5, 1., 2., 5.]), np.array([0.1, 2., 2., 3.]))',
     [0.6547208460185768, 0.1353352832366127, 0.40600584970983794, 0.8152632445237722]),
    ('special.betainc(np.array([0.5, 1., 2., 5.]), np.array([0.5, 2., 2., 1.]), np.array([0.1, 0.5, 0.9, 0.3]))',
     [0.20483276469913345, 0.75, 0.972, 0.0024299999999999994]),
    ('special.polygamma(np.array([1, 2, 3]), np.array([0.5, 2., 5.]))',
     [4.93480220054468, -0.4041138063191886, 0.02142782819275508]),
    ('special.zeta(np.array([2., 3.]), np.array([1., 2.]))',
     [1.6449340668482266, 0.2020569031595943]),
    ('special.zeta(np.array([2., 4.]))',
     [1.6449340668482264, 1.0823232337111381]),
    ('special.factorial(np.array([0., 1., 4., 6.5]))',
     [1.0, 1.0, 24.0, 1871.2543057977884]),
    ('special.softmax(np.array([[1., 2., 3.], [0., 0., 0.]]), axis=1)',
     [0.09003057317038046, 0.24472847105479764, 0.6652409557748218, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333]),
    ('special.log_softmax(np.array([1., 2., 3.]))',
     [-2.4076059644443806, -1.4076059644443804, -0.4076059644443804]),
    ('special.logsumexp(np.array([[1., 2., 3.], [-1., 0., 100.]]))',
     [100.0]),
    ('special.logsumexp(np.array([[1., 2., 3.], [-1., 0., 100.]]), axis=1)',
     [3.40760596444438, 100.0]),
    ('special.logsumexp(np.array([[1., 2., 3.], [-1., 0., 100.]]), axis=0, keepdims=True)',
     [1.1269280110429725, 2.1269280110429727, 100.0]),
    ('special.logsumexp(np.array([1., 2., 3.]), b=np.array([1., -1., 0.5]))',
     [1.6811991973354306]),
    ('special.logsumexp(np.array([1., 2., 3.]), b=np.array([1., -2., 0.]), return_sign=True)',
     [2.48988012564475, -1.0]),
    ('special.logsumexp(np.array([-np.inf, -np.inf]))',
     [-np.inf]),
    ('stats.norm.logpdf(X, 0.5, 2.)',
     [-3.143335713764618, -1.893335713764618, -1.737085713764618, -1.643335713764618, -1.617085713764618, -1.643335713764618, -2.112085713764618, -6.893335713764618]),
    ('stats.norm.pdf(X)',
     [0.0044318484119380075, 0.24197072451914337, 0.3520653267642995, 0.3989422804014327, 0.38138781546052414, 0.24197072451914337, 0.01752830049356854, 9.134720408364595e-12]),
    ('stats.norm.cdf(X, 1., 3.)',
     [0.09121121972586788, 0.2524925375469229, 0.3085375387259869, 0.36944134018176367, 0.40775128829689533, 0.5, 0.6914624612740131, 0.9772498680518208]),
    ('stats.norm.logcdf(X)',
     [-6.60772622151035, -1.8410216450092634, -1.1759117615936188, -0.6931471805599453, -0.4814101615884813, -0.1727537790234499, -0.00622902548586, -1.2798125438866539e-12]),
    ('stats.norm.sf(X)',
     [0.9986501019683699, 0.8413447460685429, 0.6914624612740131, 0.5, 0.3820885778110474, 0.15865525393145707, 0.006209665325776132, 1.279812543885835e-12]),
    ('stats.norm.logsf(X)',
     [-0.0013508099647481925, -0.1727537790234499, -0.36894641528865635, -0.6931471805599453, -0.9621028181688505, -1.8410216450092634, -5.081648277278691, -27.384307498811076]),
    ('stats.norm.ppf(P)',
     [-np.inf, -11.464024688443613, -4.753424308822899, -2.3263478740408408, -0.8416212335729142, 0.0, 0.5244005127080407, 2.3263478740408408, 4.753424308817087, np.inf]),
    ('stats.norm.isf(P, 1., 2.)',
     [np.inf, 23.928049376887227, 10.506848617645797, 5.6526957480816815, 2.6832424671458286, 1.0, -0.048801025416081334, -3.6526957480816815, -8.506848617634175, -np.inf]),
    ('stats.expon.logpdf(X)',
     [-np.inf, -np.inf, -np.inf, -0.0, -0.3, -1.0, -2.5, -7.0]),
    ('stats.expon.pdf(X, 0.5, 2.)',
     [0.0, 0.0, 0.0, 0.0, 0.0, 0.38940039153570244, 0.18393972058572117, 0.019387103915861004]),
    ('stats.expon.cdf(X)',
     [0.0, 0.0, 0.0, 0.0, 0.2591817793182821, 0.6321205588285577, 0.9179150013761012, 0.9990881180344455]),
    ('stats.expon.logcdf(X)',
     [-np.inf, -np.inf, -np.inf, -np.inf, -1.3502256128148467, -0.45867514538708193, -0.08565048374203818, -0.0009122979828390684]),
    ('stats.expon.sf(X)',
     [1.0, 1.0, 1.0, 1.0, 0.7408182206817179, 0.36787944117144233, 0.0820849986238988, 0.0009118819655545162]),
    ('stats.expon.logsf(X)',
     [0.0, 0.0, 0.0, 0.0, -0.3, -1.0, -2.5, -7.0]),
    ('stats.expon.ppf(P)',
     [0.0, 1e-30, 1.0000005000003334e-06, 0.010050335853501442, 0.22314355131420976, 0.6931471805599453, 1.203972804325936, 4.605170185988091, 13.815510557935518, np.inf]),
    ('stats.laplace.logpdf(X)',
     [-3.6931471805599454, -1.6931471805599452, -1.1931471805599454, -0.6931471805599453, -0.9931471805599453, -1.6931471805599452, -3.1931471805599454, -7.693147180559945]),
    ('stats.laplace.pdf(X, 1., 2.)',
     [0.033833820809153176, 0.09196986029286058, 0.11809163818525367, 0.15163266492815836, 0.17617202242967836, 0.25, 0.11809163818525367, 0.012446767091965986]),
    ('stats.laplace.cdf(X)',
     [0.024893534183931972, 0.18393972058572117, 0.3032653298563167, 0.5, 0.6295908896591411, 0.8160602794142788, 0.9589575006880506, 0.9995440590172228]),
    ('stats.logistic.logpdf(X)',
     [-3.097174703147484, -1.6265233750364456, -1.4481539683602134, -1.3862943611198906, -1.408710488937054, -1.6265233750364456, -2.6577794685850993, -7.001822932907548]),
    ('stats.logistic.pdf(X, 1., 2.)',
     [0.05249679270175326, 0.09830596662074093, 0.108947496880907, 0.11750185610079725, 0.12124869751125004, 0.125, 0.108947496880907, 0.022588329865456065]),
    ('stats.logistic.cdf(X)',
     [0.04742587317756678, 0.2689414213699951, 0.3775406687981454, 0.5, 0.574442516811659, 0.7310585786300049, 0.9241418199787566, 0.9990889488055994]),
    ('stats.logistic.sf(X)',
     [0.9525741268224334, 0.7310585786300049, 0.6224593312018546, 0.5, 0.425557483188341, 0.2689414213699951, 0.07585818002124355, 0.0009110511944006454]),
    ('stats.logistic.ppf(P)',
     [-np.inf, -69.07755278982137, -13.815509557963773, -4.59511985013459, -1.3862943611198906, 0.0, 0.8472978603872034, 4.595119850134589, 13.815509557935018, np.inf]),
    ('stats.logistic.isf(P)',
     [np.inf, 69.07755278982137, 13.815509557963773, 4.59511985013459, 1.3862943611198906, 0.0, -0.8472978603872034, -4.595119850134589, -13.815509557935018, -np.inf]),
    ('stats.cauchy.logpdf(X)',
     [-3.447314978843446, -1.8378770664093453, -1.3678734371636099, -1.1447298858494002, -1.2309075820904525, -1.8378770664093453, -3.1257313547159837, -5.056752891277546]),
    ('stats.cauchy.pdf(X, 1., 2.)',
     [0.03183098861837907, 0.07957747154594767, 0.10185916357881303, 0.12732395447351627, 0.14178614083910498, 0.15915494309189535, 0.10185916357881303, 0.015915494309189534]),
    ('stats.cauchy.cdf(X)',
     [0.10241638234956672, 0.25, 0.35241638234956674, 0.5, 0.5927735790777424, 0.75, 0.8788810584091566, 0.9548327646991335]),
    ('stats.cauchy.logcdf(X)',
     [-2.278708595290299, -1.3862943611198906, -1.0429418980620317, -0.6931471805599453, -0.5229427757004312, -0.2876820724517809, -0.12910570511816621, -0.04621906933420549]),
    ('stats.cauchy.sf(X)',
     [0.8975836176504333, 0.75, 0.6475836176504333, 0.5, 0.4072264209222577, 0.25, 0.12111894159084341, 0.045167235300866554]),
    ('stats.cauchy.logsf(X)',
     [-0.10804899566097342, -0.2876820724517809, -0.43450735451772826, -0.6931471805599453, -0.8983859314640409, -1.3862943611198906, -2.110982227847994, -3.097383337722658]),
    ('stats.cauchy.ppf(P)',
     [-np.inf, -3.183098861837907e+29, -318309.8861827435, -31.820515953773956, -1.3763819204711736, 0.0, 0.7265425280053608, 31.820515953773928, 318309.88617359026, np.inf]),
    ('stats.cauchy.isf(P)',
     [np.inf, 3.183098861837907e+29, 318309.8861827435, 31.820515953773956, 1.3763819204711736, 0.0, -0.7265425280053608, -31.820515953773928, -318309.88617359026, -np.inf]),
    ('stats.uniform.logpdf(X)',
     [-np.inf, -np.inf, -np.inf, 0.0, 0.0, 0.0, -np.inf, -np.inf]),
    ('stats.uniform.pdf(X, -1., 3.)',
     [0.0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.0, 0.0]),
    ('stats.uniform.cdf(X, -1., 3.)',
     [0.0, 0.0, 0.16666666666666666, 0.3333333333333333, 0.43333333333333335, 0.6666666666666666, 1.0, 1.0]),
    ('stats.uniform.ppf(P, 2., 3.)',
     [2.0, 2.0, 2.000003, 2.03, 2.6, 3.5, 4.1, 4.97, 4.9999970000000005, 5.0]),
    ('stats.t.logpdf(X, 3.)',
     [-3.7734775718632907, -1.5762529945270716, -1.1609742649705825, -1.0008888496235098, -1.0600064541065986, -1.5762529945270716, -3.252911375335958, -6.706151709450145]),
    ('stats.t.pdf(X, 1.5, 0.5, 2.)',
     [0.04241282530424864, 0.11442168894912239, 0.1405087077618852, 0.16189214152528764, 0.16895833316275258, 0.16189214152528764, 0.08996545685047697, 0.01258068077407222]),
    ('stats.gamma.logpdf(X, 2.)',
     [-np.inf, -np.inf, -np.inf, -np.inf, -1.5039728043259362, -1.0, -1.583709268125845, -5.0540898509446865]),
    ('stats.gamma.logpdf(X, 1.)',
     [-np.inf, -np.inf, -np.inf, 0.0, -0.3, -1.0, -2.5, -7.0]),
    ('stats.gamma.pdf(X, 3., 0.5, 2.)',
     [0.0, 0.0, 0.0, 0.0, 0.0, 0.012168762235490701, 0.09196986029286057, 0.10238814255564094]),
    ('stats.gamma.cdf(X, 2.)',
     [0.0, 0.0, 0.0, 0.0, 0.03693631311376678, 0.2642411176571153, 0.7127025048163542, 0.9927049442755639]),
    ('stats.gamma.logcdf(X, 2.)',
     [-np.inf, -np.inf, -np.inf, -np.inf, -3.298560116615883, -1.3308932682040548, -0.3386911899353018, -0.007321794764670715]),
    ('stats.gamma.sf(X, 2.)',
     [1.0, 1.0, 1.0, 1.0, 0.9630636868862332, 0.7357588823428847, 0.2872974951836458, 0.007295055724436127]),
    ('stats.gamma.logsf(X, 2.)',
     [0.0, 0.0, 0.0, 0.0, -0.03763573553250895, -0.3068528194400546, -1.247237031504632, -4.920558458320165]),
    ('stats.beta.logpdf(np.array([-0.5, 0.2, 0.5, 0.9, 1.5]), 2., 3.)',
     [-np.inf, 0.42918163472548043, 0.4054651081081646, -2.2256240518579173, -np.inf]),
    ('stats.beta.logpdf(np.array([0., 0.2, 1.]), 1., 1.)',
     [0.0, 0.0, 0.0]),
    ('stats.beta.pdf(np.array([0.2, 0.5]), 2., 3., 0.1, 2.)',
     [0.27075, 0.7680000000000001]),
    ('stats.beta.cdf(np.array([-0.5, 0., 0.2, 0.5, 0.9, 1., 1.5]), 2., 3.)',
     [0.0, 0.0, 0.18080000000000004, 0.6875, 0.9963, 1.0, 1.0]),
    ('stats.beta.logcdf(np.array([0.2, 0.5, 0.9]), 2., 3.)',
     [-1.7103638310240608, -0.3746934494414107, -0.0037068619313264726]),
    ('stats.beta.sf(np.array([-0.5, 0.2, 0.5, 1.5]), 2., 3.)',
     [1.0, 0.8191999999999999, 0.3125, 0.0]),
    ('stats.beta.logsf(np.array([0.2, 0.5, 0.9]), 2., 3.)',
     [-0.19942702469689377, -1.1631508098056809, -5.599422459331959]),
    ('stats.poisson.logpmf(K, 3.)',
     [-np.inf, -3.0, -1.9013877113318902, -np.inf, -1.4959226032237258, -7.118289686394418]),
    ('stats.poisson.pmf(np.array([0., 1., 5.]), 2.)',
     [0.1353352832366127, 0.2706705664732254, 0.03608940886309672]),
    ('stats.poisson.cdf(K, 3.)',
     [0.0, 0.04978706836786395, 0.1991482734714558, 0.42319008112684364, 0.6472318887822313, 0.9997076630493527]),
    ('stats.poisson.entropy(np.array([0.5, 3., 20., 60., 200., 5000.]))',
     [0.9276374674957975, 1.9314701981485691, 2.912526400182312, 3.464710097858271, 4.06767950147638, 5.677518460496018]),
    ('stats.bernoulli.logpmf(np.array([-1., 0., 1., 2.]), 0.3)',
     [-np.inf, -0.35667494393873245, -1.2039728043259361, -np.inf]),
    ('stats.bernoulli.pmf(np.array([0., 1.]), 0.25)',
     [0.75, 0.25]),
    ('stats.bernoulli.cdf(np.array([-1., 0., 0.5, 1., 2.]), 0.3)',
     [0.0, 0.7, 0.7, 1.0, 1.0]),
    ('stats.bernoulli.ppf(np.array([0.1, 0.5, 0.7, 0.71, 1.]), 0.3)',
     [0.0, 0.0, 0.0, 1.0, 1.0]),
    ('stats.multivariate_normal.logpdf(np.array([0.5, -1.]), np.array([0., 1.]), 2.)',
     [-3.5935242469692907]),
    ('stats.multivariate_normal.logpdf(0.5, 1., 2.)',
     [-1.3280121234846454]),
    ('stats.multivariate_normal.logpdf(np.array([[0.5, -1.], [1., 1.]]), np.array([0., 1.]), np.array([[2., 0.3], [0.3, 1.]]))',
     [-4.478182614140185, -2.423208792150656]),

]

_NAMESPACE = {"special": special, "stats": stats, "np": np, "X": X, "P": P, "POS": POS, "K": K}

# rows whose float32 results are further from scipy's than the default tolerance allows,
# with the reason: (rtol, atol)
_TOLERANCE32 = {
    # 1 - p rounds in float32, so the upper tail's quantiles carry p's rounding error
    "special.ndtri(P)": (2e-3, 1e-6), "stats.norm.ppf(P)": (2e-3, 1e-6),
    "stats.norm.isf(P, 1., 2.)": (2e-3, 1e-5), "stats.logistic.ppf(P)": (2e-3, 1e-6),
    "stats.logistic.isf(P)": (2e-3, 1e-6), "special.logit(P)": (2e-3, 1e-6),
    # (and for the Cauchy's 1/(1-p) tail, 0.999999 is 1 - 1.0133e-6 in float32)
    "stats.cauchy.ppf(P)": (2e-2, 1e-6), "stats.cauchy.isf(P)": (2e-2, 1e-6),
    "stats.expon.ppf(P)": (2e-3, 1e-6),
}


def _evaluate(expr):
  out = eval(expr, dict(_NAMESPACE))  # noqa: S307 (the table's own expressions)
  return np.concatenate([np.ravel(np.asarray(o)) for o in out]) if isinstance(out, tuple) \
      else np.ravel(np.asarray(out))


def _all_rows_in_one_program():
  """Every row compiled as one program: what each function does when called eagerly too (it
  runs as one compiled call), at the cost of one compile instead of one per row.  A row
  that fails in it is left out and evaluated by its own test."""
  rows = [expr for expr, _ in FACTS]
  try:
    return dict(zip(rows, minijax.jit(lambda: [_evaluate_traced(e) for e in rows])()))
  except Exception:
    return {}


@pytest.fixture(scope="module")
def float32_results():
  return _all_rows_in_one_program()


@pytest.mark.parametrize("expr,expected", FACTS, ids=[f[0] for f in FACTS])
def test_float32_values_match_scipy(float32_results, expr, expected):
  got = float32_results.get(expr)
  got = _evaluate(expr) if got is None else np.asarray(got)
  assert got.dtype == np.float32, got.dtype
  rtol, atol = _TOLERANCE32.get(expr, (2e-5, 1e-6))
  np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def float64_results():
  minijax.config.update("enable_x64", True)
  try:
    return _all_rows_in_one_program()
  finally:
    minijax.config.update("enable_x64", False)


def _evaluate_traced(expr):
  out = eval(expr, dict(_NAMESPACE))  # noqa: S307
  return jnp.concatenate([jnp.ravel(o) for o in out]) if isinstance(out, tuple) else jnp.ravel(
      jnp.asarray(out))


@pytest.mark.parametrize("expr,expected", FACTS, ids=[f[0] for f in FACTS])
def test_float64_values_match_scipy(float64_results, x64, expr, expected):
  got = float64_results.get(expr)
  got = _evaluate(expr) if got is None else np.asarray(got)
  assert got.dtype == np.float64, got.dtype
  np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- derivatives

def _pts(*values):
  return np.array(values, np.float64)


# name -> (function of float64 arrays, arguments, order).  (gammainc and betainc are
# checked in test_lax_special.py; gamma.cdf runs through the first here.  The distributions'
# functions are first-order checks: their second derivatives are those of the special
# functions above, checked to second order.)
GRADS = {
    "gammaln": (special.gammaln, (_pts(0.3, 1.7, 6.0),), 2),
    "digamma": (special.digamma, (_pts(0.3, 1.7, 6.0),), 2),
    "erf": (special.erf, (_pts(-1.2, 0.1, 0.9),), 2),
    "erfc": (special.erfc, (_pts(-1.2, 0.1, 0.9),), 2),
    "erfinv": (special.erfinv, (_pts(-0.7, 0.1, 0.6),), 2),
    "expit": (special.expit, (_pts(-2.0, 0.3, 4.0),), 2),
    "logit": (special.logit, (_pts(0.1, 0.5, 0.8),), 2),
    "xlogy": (special.xlogy, (_pts(-1.0, 0.5, 2.0), _pts(0.4, 1.5, 3.0)), 2),
    "xlog1py": (special.xlog1py, (_pts(-1.0, 0.5, 2.0), _pts(-0.4, 1.5, 3.0)), 2),
    "entr": (special.entr, (_pts(0.2, 1.0, 3.0),), 2),
    "multigammaln": (lambda a: special.multigammaln(a, 3), (_pts(1.5, 2.5, 7.0),), 2),
    "betaln": (special.betaln, (_pts(0.5, 2.0, 3.0), _pts(1.5, 9.0, 30.0)), 2),
    "ndtr": (special.ndtr, (_pts(-2.0, 0.1, 1.5),), 2),
    "ndtri": (special.ndtri, (_pts(0.01, 0.3, 0.95),), 1),
    "log_ndtr": (special.log_ndtr, (_pts(-12.0, -2.0, 0.5, 6.0),), 2),
    "logsumexp": (lambda a, b: special.logsumexp(a, axis=0, b=b),
                  (np.array([[0.5, -1.0], [2.0, 0.3], [-0.2, 1.1]]),
                   np.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.7]])), 2),
    "norm.logpdf": (stats.norm.logpdf, (_pts(-1.0, 0.5), _pts(0.2, -0.3), _pts(1.5, 0.7)), 1),
    "norm.logcdf": (stats.norm.logcdf, (_pts(-1.0, 0.5), _pts(0.2, -0.3), _pts(1.5, 0.7)), 1),
    "gamma.logpdf": (stats.gamma.logpdf, (_pts(0.5, 2.5), _pts(1.5, 3.0)), 1),
    "gamma.cdf": (stats.gamma.cdf, (_pts(0.5, 2.5), _pts(1.5, 3.0)), 1),
    "beta.logpdf": (stats.beta.logpdf, (_pts(0.2, 0.7), _pts(1.5, 3.0), _pts(2.0, 0.8)), 1),
    "t.logpdf": (stats.t.logpdf, (_pts(-0.5, 1.5), _pts(2.5, 6.0)), 1),
    "poisson.logpmf": (lambda mu: stats.poisson.logpmf(_pts(0.0, 3.0), mu), (_pts(0.7, 2.5),),
                       1),
    "expon.logcdf": (stats.expon.logcdf, (_pts(0.5, 2.0), _pts(0.1, -0.2), _pts(1.5, 0.7)), 1),
    "laplace.cdf": (stats.laplace.cdf, (_pts(-0.5, 1.5), _pts(0.1, -0.2), _pts(1.5, 0.7)), 1),
    "logistic.logpdf": (stats.logistic.logpdf, (_pts(-0.5, 1.5), _pts(0.1, 0.2), _pts(1.5, 0.7)),
                        1),
    "cauchy.logcdf": (stats.cauchy.logcdf, (_pts(-0.5, 1.5), _pts(0.1, 0.2), _pts(1.5, 0.7)), 1),
}


@pytest.fixture(scope="module")
def grad_results():
  return gradient_checks_in_x64(GRADS)


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_finite_differences(grad_results, x64, name):
  verify_gradient_check(grad_results, name)


def test_custom_derivatives_hold_where_the_formula_breaks_down():
  # xlogy at x = 0: d/dx = log y, d/dy = 0
  gx, gy = minijax.grad(special.xlogy, argnums=(0, 1))(0.0, 2.0)
  np.testing.assert_allclose([gx, gy], [np.log(2.0), 0.0], rtol=1e-6)
  # log_ndtr far in the lower tail: d/dx log Φ(x) → -x
  np.testing.assert_allclose(minijax.grad(special.log_ndtr)(-40.0), 40.02498, rtol=1e-4)
  np.testing.assert_allclose(minijax.grad(special.log_ndtr)(9.0), 1.0279e-18, rtol=1e-3)
  np.testing.assert_allclose(minijax.grad(special.logit)(0.5), 4.0)
  # logsumexp: the gradient is the softmax; -inf entries get 0, not nan
  a = jnp.array([1.0, -jnp.inf, 2.0])
  g = minijax.grad(special.logsumexp)(a)
  np.testing.assert_allclose(g, [1 / (1 + np.e), 0.0, np.e / (1 + np.e)], rtol=1e-6)
  np.testing.assert_allclose(special.logsumexp(np.array([1000.0, 1000.0], np.float32)),
                             1000 + np.log(2), rtol=1e-6)


def test_logsumexp_signs_and_where():
  out, sign = special.logsumexp(np.array([0.0, 0.0]), b=np.array([1.0, -3.0]), return_sign=True)
  np.testing.assert_allclose([out, sign], [np.log(2.0), -1.0], rtol=1e-6)
  assert np.isnan(special.logsumexp(np.array([0.0, 0.0]), b=np.array([1.0, -3.0])))
  masked = special.logsumexp(np.array([1.0, 50.0, 2.0]), where=np.array([True, False, True]))
  np.testing.assert_allclose(masked, np.log(np.e + np.e ** 2), rtol=1e-6)


def test_vmap_matches_a_loop_over_slices():
  x = np.array([[0.3, -1.0], [2.0, 0.5]], np.float32)
  checks = {
      "norm.logpdf": VmapCheck(lambda v, loc: stats.norm.logpdf(v, loc, 2.0), (x, x * 0.5),
                               [((0, 0), 0), ((None, 1), 1)]),
      "logsumexp": VmapCheck(lambda v: special.logsumexp(v, axis=0), (x,), [((0,), 0),
                                                                           ((1,), 0)]),
      "gamma.cdf": VmapCheck(lambda v, a: stats.gamma.cdf(v, a), (np.abs(x) + 0.1, x * 0 + 1.5),
                             [((0, None), 0), ((1, 0), 0)]),
  }
  results = run_together(checks)
  for name, check in checks.items():
    check.verify(results[name]) if name in results else check.run()


def test_eager_calls_are_one_compiled_program(caplog):
  from tests.conftest import compiles
  args = (np.array([0.1, 0.4], np.float32),)
  special.ndtri(*args)
  assert compiles(caplog, lambda: special.ndtri(*args)) == []
  assert len(compiles(caplog, lambda: special.ndtri(np.array([0.1, 0.4, 0.6], np.float32)))) == 1


def test_bad_arguments_raise():
  with pytest.raises(ValueError, match="does not support complex"):
    special.gammaln(np.array([1 + 1j], np.complex64))
  with pytest.raises(ValueError, match="does not support complex"):
    stats.norm.logpdf(np.array([1 + 1j], np.complex64))
  with pytest.raises(TypeError):
    special.multigammaln(np.float32(3.0), 2.5)
  with pytest.raises(NotImplementedError, match="allow_singular"):
    stats.multivariate_normal.logpdf(0.5, 0.0, 1.0, allow_singular=True)
  with pytest.raises(ValueError, match="incompatible shapes"):
    stats.norm.logpdf(np.ones(3), np.ones(2))
